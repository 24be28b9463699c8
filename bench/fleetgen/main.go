// Command fleetgen writes a publisher config of one zone with N services,
// each with an address and a service config of about 300 bytes (a method
// config with a timeout and a retry policy), for the scale benchmark
// (bench/scale.sh). -change K makes service K's timeout 2s instead of 1s:
// the one-service change a reload publishes.
//
// -format json writes the same config as JSON (one service a line), and
// -policies adds three policies to the zone: a zone-wide default, one by
// label (every tenth service carries team: payments) and one by name, so
// that the shapes users run are measured, not only block YAML.
//
// -object K writes only service K, as the JSON object of the admin API
// (metadata with its zone, name and labels, and spec): the body of a PUT
// of one service of a store loaded from the same flags, or a file for
// `grpc-config-dns publish`.
//
//	go run ./bench/fleetgen -n 100000 > fleet.yaml
//	go run ./bench/fleetgen -n 100000 -format json -policies > fleet.json
//	go run ./bench/fleetgen -policies -change 50000 -object 50000 > svc.json
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	n := flag.Int("n", 10000, "number of services")
	change := flag.Int("change", -1, "the service whose timeout is 2s (none when negative)")
	origin := flag.String("origin", "fleet.test.", "the zone")
	format := flag.String("format", "yaml", "yaml or json")
	policies := flag.Bool("policies", false, "add a zone-wide, a label and a name policy")
	object := flag.Int("object", -1, "write only this service, as an admin API object (none when negative)")
	flag.Parse()
	if *format != "yaml" && *format != "json" {
		fmt.Fprintln(os.Stderr, "fleetgen: -format is yaml or json")
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	if *object >= 0 {
		timeout := "1s"
		if *object == *change {
			timeout = "2s"
		}
		labels := ""
		if *policies && *object%10 == 0 {
			labels = `,"labels":{"team":"payments"}`
		}
		fmt.Fprintf(w, `{"metadata":{"zone":%q,"name":"svc%d"%s},"spec":{`, strings.TrimSuffix(*origin, "."), *object, labels)
		writeJSONSpec(w, *object, timeout)
		w.WriteString("}\n")
		flush(w)
		return
	}
	json := *format == "json"
	if json {
		fmt.Fprintf(w, `{"zones":[{"origin":%q,"ttl":300,"nameservers":["ns1.example.net."],"transfer":{"allow":["127.0.0.1"]},`, *origin)
		if *policies {
			w.WriteString(`"policies":[` +
				`{"name":"retries","targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{}],"waitForReady":true}]}},` +
				`{"name":"payments","targetRef":{"kind":"Service","labels":{"team":"payments"}},"default":{"loadBalancingConfig":[{"round_robin":{}}]}},` +
				`{"name":"svc7-slow","targetRef":{"kind":"Service","name":"svc7"},"default":{"methodConfig":[{"name":[{}],"timeout":"30s"}]}}],`)
		}
		w.WriteString("\"services\":[\n")
	} else {
		fmt.Fprintf(w, "zones:\n  - origin: %s\n    ttl: 300\n    nameservers: [ns1.example.net.]\n    transfer: {allow: [127.0.0.1]}\n", *origin)
		if *policies {
			w.WriteString(`    policies:
      - {name: retries, targetRef: {kind: Zone}, default: {methodConfig: [{name: [{}], waitForReady: true}]}}
      - {name: payments, targetRef: {kind: Service, labels: {team: payments}}, default: {loadBalancingConfig: [{round_robin: {}}]}}
      - {name: svc7-slow, targetRef: {kind: Service, name: svc7}, default: {methodConfig: [{name: [{}], timeout: 30s}]}}
`)
		}
		w.WriteString("    services:\n")
	}
	for i := range *n {
		timeout := "1s"
		if i == *change {
			timeout = "2s"
		}
		labels := ""
		if *policies && i%10 == 0 {
			labels = "payments"
		}
		if json {
			sep := ","
			if i == *n-1 {
				sep = ""
			}
			l := ""
			if labels != "" {
				l = `"labels":{"team":"payments"},`
			}
			fmt.Fprintf(w, `{"name":"svc%d",%s`, i, l)
			writeJSONSpec(w, i, timeout)
			w.WriteString(sep + "\n")
			continue
		}
		fmt.Fprintf(w, "      - name: svc%d\n", i)
		if labels != "" {
			w.WriteString("        labels: {team: payments}\n")
		}
		fmt.Fprintf(w, `        addresses: [10.%d.%d.%d]
        serviceConfig:
          methodConfig:
            - name: [{service: fleet.v1.Service%d}]
              timeout: %s
              retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}
`, i>>16, i>>8&0xff, i&0xff, i, timeout)
	}
	if json {
		w.WriteString("]}]}\n")
	}
	flush(w)
}

// writeJSONSpec writes the fields of service i after its name (or its
// labels) and the closing brace: its address and service config.
func writeJSONSpec(w *bufio.Writer, i int, timeout string) {
	fmt.Fprintf(w, `"addresses":["10.%d.%d.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"fleet.v1.Service%d"}],"timeout":"%s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}`,
		i>>16, i>>8&0xff, i&0xff, i, timeout)
}

func flush(w *bufio.Writer) {
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
