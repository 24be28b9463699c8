package resolver_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
	"github.com/grpc-config-dns/grpc-config-dns/resolver"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// publish starts a test DNS server that publishes echo.example.test and a
// canary record for it; in production this is your DNS.
func publish() *dnstest.Server {
	dns, err := dnstest.New()
	if err != nil {
		log.Fatal(err)
	}
	dns.SetAddrs("echo.example.test", 30, "127.0.0.1")
	dns.SetConfig("echo.example.test", 30, `[
	  {"clientLanguage":["GO"],"percentage":20,"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}},
	  {"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"2s"}]}}]`)
	return dns
}

// A channel takes its service config from DNS: the Builder's DialOptions
// give it the resolver, and State says what it resolved and why.
func Example() {
	dns := publish()
	defer dns.Close()

	b := resolver.NewBuilder(resolver.Options{Hostname: "web-1", Bucket: 37})
	target := "dnsconfig://" + dns.Addr + "/echo.example.test:50051"
	conn, err := grpc.NewClient(target, append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	conn.Connect() // a channel resolves when it first connects

	for range 500 {
		if st, ok := b.State(target); ok && !st.Resolved.IsZero() {
			fmt.Println(st.Addresses, st.Choice, st.ServiceConfig)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// [127.0.0.1:50051] 1 {"methodConfig":[{"name":[{}],"timeout":"2s"}]}
}

// LookupConfig reads a published record without a channel, with the
// resolver's lookup code; serviceconfig.Choose says what a client makes of
// it.
func ExampleLookupConfig() {
	dns := publish()
	defer dns.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	recs, err := resolver.LookupConfig(ctx, dns.Addr, "echo.example.test")
	if err != nil {
		log.Fatal(err)
	}
	o := sc.Choose(sc.Answer{Owner: recs.Owner, NXDomain: recs.NXDomain, Records: recs.Records}, sc.Client{Language: "go", Bucket: 5})
	fmt.Println(recs.Owner, o.Result, o.Choice, string(o.ServiceConfig))
	// Output:
	// _grpc_config.echo.example.test. chosen 0 {"loadBalancingConfig":[{"round_robin":{}}]}
}
