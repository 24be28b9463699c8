// Command client calls a service whose addresses and service config come
// from DNS through the dnsconfig resolver, then prints what it resolved.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

var target = flag.String("target", "dnsconfig://127.0.0.1:1053/echo.example.test:50051", "dnsconfig://NAMESERVER/HOST:PORT")

func main() {
	flag.Parse()
	b := resolver.NewBuilder(resolver.Options{}) // language "go", bucket drawn once per process
	conn, err := grpc.NewClient(*target, append(b.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	st, _ := b.State(*target)
	fmt.Printf("addresses %v, choice %d, service config %s\n%s\n", st.Addresses, st.Choice, st.ServiceConfig, st.Reason)
	if err != nil {
		log.Fatalf("health check: %v", err)
	}
	fmt.Println("health check:", resp.GetStatus())
}
