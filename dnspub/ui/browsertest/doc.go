// Package browsertest loads the publisher's web view in a real browser:
// headless Chromium against a running `grpc-config-dns serve`, checking
// the DOM the browser built (every value has its origin beside it, every
// split adds up to 100 %), that the browser logged no console error (a
// blocked style, a missing asset) and that HTML Tidy finds no problem,
// and keeping screenshots as CI artifacts.
//
// Under plain `go test ./...` the test skips. Run it with ./run.sh, which
// installs Debian's chromium and tidy when missing and requires them:
//
//	dnspub/ui/browsertest/run.sh
//
// Screenshots go to $CI_ARTIFACTS/ui (default .ci/artifacts/ui).
package browsertest
