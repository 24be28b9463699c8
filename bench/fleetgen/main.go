// Command fleetgen writes a publisher config of one zone with N services,
// each with an address and a service config of about 300 bytes (a method
// config with a timeout and a retry policy), for the scale benchmark
// (bench/scale.sh). -change K makes service K's timeout 2s instead of 1s:
// the one-service change a reload publishes.
//
//	go run ./bench/fleetgen -n 100000 > fleet.yaml
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
)

func main() {
	n := flag.Int("n", 10000, "number of services")
	change := flag.Int("change", -1, "the service whose timeout is 2s (none when negative)")
	origin := flag.String("origin", "fleet.test.", "the zone")
	flag.Parse()
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "zones:\n  - origin: %s\n    ttl: 300\n    nameservers: [ns1.example.net.]\n    transfer: {allow: [127.0.0.1]}\n    services:\n", *origin)
	for i := range *n {
		timeout := "1s"
		if i == *change {
			timeout = "2s"
		}
		fmt.Fprintf(w, `      - name: svc%d
        addresses: [10.%d.%d.%d]
        serviceConfig:
          methodConfig:
            - name: [{service: fleet.v1.Service%d}]
              timeout: %s
              retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}
`, i, i>>16, i>>8&0xff, i&0xff, i, timeout)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
