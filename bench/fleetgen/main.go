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
//	go run ./bench/fleetgen -n 100000 > fleet.yaml
//	go run ./bench/fleetgen -n 100000 -format json -policies > fleet.json
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
	format := flag.String("format", "yaml", "yaml or json")
	policies := flag.Bool("policies", false, "add a zone-wide, a label and a name policy")
	flag.Parse()
	if *format != "yaml" && *format != "json" {
		fmt.Fprintln(os.Stderr, "fleetgen: -format is yaml or json")
		os.Exit(2)
	}
	f := fleet{n: *n, change: *change, origin: *origin, policies: *policies}
	w := bufio.NewWriter(os.Stdout)
	if *format == "json" {
		f.writeJSON(w)
	} else {
		f.writeYAML(w)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// fleet is the config fleetgen writes: zone origin with n services, and
// the policies when policies is set.
type fleet struct {
	n, change int
	origin    string
	policies  bool
}

// timeout is the timeout of service i's method config.
func (f fleet) timeout(i int) string {
	if i == f.change {
		return "2s"
	}
	return "1s"
}

// payments reports whether service i carries the label team: payments,
// which a policy selects.
func (f fleet) payments(i int) bool { return f.policies && i%10 == 0 }

func (f fleet) writeJSON(w *bufio.Writer) {
	fmt.Fprintf(w, `{"zones":[{"origin":%q,"ttl":300,"nameservers":["ns1.example.net."],"transfer":{"allow":["127.0.0.1"]},`, f.origin)
	if f.policies {
		w.WriteString(`"policies":[` +
			`{"name":"retries","targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{}],"waitForReady":true}]}},` +
			`{"name":"payments","targetRef":{"kind":"Service","labels":{"team":"payments"}},"default":{"loadBalancingConfig":[{"round_robin":{}}]}},` +
			`{"name":"svc7-slow","targetRef":{"kind":"Service","name":"svc7"},"default":{"methodConfig":[{"name":[{}],"timeout":"30s"}]}}],`)
	}
	w.WriteString("\"services\":[\n")
	for i := range f.n {
		sep := ","
		if i == f.n-1 {
			sep = ""
		}
		l := ""
		if f.payments(i) {
			l = `"labels":{"team":"payments"},`
		}
		fmt.Fprintf(w, `{"name":"svc%d",%s"addresses":["10.%d.%d.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"fleet.v1.Service%d"}],"timeout":"%s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}%s`+"\n",
			i, l, i>>16, i>>8&0xff, i&0xff, i, f.timeout(i), sep)
	}
	w.WriteString("]}]}\n")
}

func (f fleet) writeYAML(w *bufio.Writer) {
	fmt.Fprintf(w, "zones:\n  - origin: %s\n    ttl: 300\n    nameservers: [ns1.example.net.]\n    transfer: {allow: [127.0.0.1]}\n", f.origin)
	if f.policies {
		w.WriteString(`    policies:
      - {name: retries, targetRef: {kind: Zone}, default: {methodConfig: [{name: [{}], waitForReady: true}]}}
      - {name: payments, targetRef: {kind: Service, labels: {team: payments}}, default: {loadBalancingConfig: [{round_robin: {}}]}}
      - {name: svc7-slow, targetRef: {kind: Service, name: svc7}, default: {methodConfig: [{name: [{}], timeout: 30s}]}}
`)
	}
	w.WriteString("    services:\n")
	for i := range f.n {
		fmt.Fprintf(w, "      - name: svc%d\n", i)
		if f.payments(i) {
			w.WriteString("        labels: {team: payments}\n")
		}
		fmt.Fprintf(w, `        addresses: [10.%d.%d.%d]
        serviceConfig:
          methodConfig:
            - name: [{service: fleet.v1.Service%d}]
              timeout: %s
              retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}
`, i>>16, i>>8&0xff, i&0xff, i, f.timeout(i))
	}
}
