// Package browsertest loads the publisher's web view in a real browser:
// headless Chromium against a running `grpc-config-dns serve`, checking
// the DOM the browser built (every value has its origin beside it, every
// split adds up to 100 %), that the browser logged no console error (a
// blocked style, a missing asset) and that HTML Tidy finds no problem,
// and keeping screenshots as CI artifacts.
//
// It does so with a config file (serve --config, Chromium's command
// line) and with a store (serve --store behind a bearer token): there a
// browser is sent to /ui/login, signs in with the form, and must land on
// the page it asked for and see the resourceVersions of what is served.
// That case drives one Chromium through the DevTools protocol on a pipe
// (cdp_test.go), since the command line cannot fill in a form.
//
// Under plain `go test ./...` the test skips. Run it with ./run.sh, which
// installs Debian's chromium and tidy when missing and requires them:
//
//	dnspub/ui/browsertest/run.sh
//
// Screenshots go to $CI_ARTIFACTS/ui (default .ci/artifacts/ui).
package browsertest
