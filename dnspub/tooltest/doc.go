// Package tooltest tests the publisher against DNS software we did not
// write: dig and kdig as clients, named-checkzone on the output of `zone`,
// and BIND 9 as a secondary that transfers the zone (AXFR, then IXFR after
// our NOTIFY) and must then answer exactly as we do, both for a config
// file and for `serve --store` changed through its admin API.
//
// The tests are behind the build tag tooltest so that `go test ./...`
// needs none of these tools. Run them with ./run.sh, which installs the
// tools (Debian packages dnsutils, knot-dnsutils, bind9) and requires them:
//
//	dnspub/tooltest/run.sh
//
// Without run.sh, `go test -tags tooltest ./dnspub/tooltest/` skips each
// test whose tools are missing and says which package provides them.
package tooltest
