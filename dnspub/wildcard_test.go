package dnspub

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestWildcardListen: on a wildcard address, answers leave from the
// address the query was sent to (IP_PKTINFO / IPV6_PKTINFO); otherwise the
// kernel picks a source address and clients, whose sockets are connected
// to the address they asked, drop the answer. The test runs itself again
// in a private network namespace, so that listening on 0.0.0.0 and [::]
// exposes nothing; it needs root and unshare(1).
func TestWildcardListen(t *testing.T) {
	if os.Getenv("DNSPUB_IN_NETNS") == "" {
		if os.Getuid() != 0 {
			t.Skip("needs root to create a network namespace")
		}
		for _, tool := range []string{"unshare", "ip"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("needs %s(8) (util-linux, iproute2)", tool)
			}
		}
		if out, err := exec.Command("unshare", "--net", "true").CombinedOutput(); err != nil {
			t.Skipf("cannot create a network namespace here (%v: %s)", err, strings.TrimSpace(string(out)))
		}
		cmd := exec.Command("unshare", "--net", os.Args[0], "-test.run=^TestWildcardListen$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "DNSPUB_IN_NETNS=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestWildcardListen") {
			t.Fatalf("in a network namespace: %v\n%s", err, out)
		}
		return
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v %s", err, out)
	}
	for _, tc := range []struct {
		listen string
		ask    []string
	}{
		{"0.0.0.0:0", []string{"127.0.0.1", "127.0.0.2"}},
		{"[::]:0", []string{"::1", "127.0.0.1", "127.0.0.3"}},
	} {
		for _, portable := range []bool{false, true} {
			ts := startServer(t, baseConfig(""), func(o *Options) { o.Listen, o.PortableUDP = tc.listen, portable })
			_, port, _ := strings.Cut(ts.addr, "]:")
			if port == "" {
				port = ts.addr[strings.LastIndex(ts.addr, ":")+1:]
			}
			for _, host := range tc.ask {
				addr := fmt.Sprintf("%s:%s", host, port)
				if strings.Contains(host, ":") {
					addr = fmt.Sprintf("[%s]:%s", host, port)
				}
				m := new(dns.Msg)
				m.SetQuestion("echo.example.test.", dns.TypeA)
				r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
				if err != nil || len(r.Answer) != 1 {
					t.Errorf("listen %s (portable %v), ask %s: %v %v", tc.listen, portable, addr, r, err)
				}
			}
		}
	}
}
