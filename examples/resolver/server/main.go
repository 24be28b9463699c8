// Command server is a gRPC server with only the standard health service,
// for trying the dnsconfig resolver: the example client calls it.
package main

import (
	"flag"
	"log"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:50051", "address to serve on")
	flag.Parse()
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	log.Printf("serving the health service on %s", l.Addr())
	log.Fatal(s.Serve(l))
}
