package pubtest_test

import (
	"fmt"
	"log"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/pubtest"
	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

// A test publishes a service config, dials through the dnsconfig
// resolver, changes the config, and sees the channel take it. In a test,
// pubtest.Start(t, config) starts the server and closes it when the test
// ends.
func Example() {
	s, err := pubtest.New(`
zones:
  - origin: example.test.
    ttl: 1
    nameservers: [ns1.example.test.]
    services:
      - name: echo
        addresses: [127.0.0.1]
        serviceConfig:
          methodConfig: [{name: [{}], timeout: 2s}]
`)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// The record's TTL (1 s) says when the channel asks again; the
	// resolver's default floor is 5 s.
	b := resolver.NewBuilder(resolver.Options{MinRefresh: 100 * time.Millisecond})
	target := "dnsconfig://" + s.Addr() + "/echo.example.test:50051"
	conn, err := grpc.NewClient(target, append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	conn.Connect()
	wait := func(want string) {
		for range 500 {
			if st, ok := b.State(target); ok && strings.Contains(st.ServiceConfig, want) {
				fmt.Println(st.Addresses, st.ServiceConfig)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		log.Fatalf("the channel never got %s", want)
	}
	wait(`"2s"`)

	if err := s.SetService("example.test", "echo", `{addresses: [127.0.0.1], serviceConfig: {methodConfig: [{name: [{}], timeout: 5s}]}}`); err != nil {
		log.Fatal(err)
	}
	wait(`"5s"`)
	// Output:
	// [127.0.0.1:50051] {"methodConfig":[{"name":[{}],"timeout":"2s"}]}
	// [127.0.0.1:50051] {"methodConfig":[{"name":[{}],"timeout":"5s"}]}
}
