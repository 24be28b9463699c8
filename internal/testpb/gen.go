// Package testpb is the test service of grpc-config-dns (echo.proto) and a
// server for it with a slow method, a flaky method and a response header
// naming the backend: what integration tests and the interop suite call.
package testpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative echo.proto
