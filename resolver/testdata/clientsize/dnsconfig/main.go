// Command dnsconfig is the client of plain with the dnsconfig resolver:
// TestClientSize measures what the resolver adds.
package main

import (
	"context"
	"log"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

func main() {
	b := resolver.NewBuilder(resolver.Options{})
	conn, err := grpc.NewClient("dnsconfig:///echo.example.test:50051",
		append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	log.Println(resp, err)
}
