// Package e2e holds end-to-end tests: the real publisher (dnspub) serving a
// zone on loopback, real grpc-go channels resolving it with our resolver,
// and real grpc-go servers answering them. It has no code of its own.
package e2e
