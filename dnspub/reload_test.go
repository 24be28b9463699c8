package dnspub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
)

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReloadOnFileChange: a valid change is picked up by the file watcher
// and raises the serial; an invalid one is rejected with its diagnostics
// logged and the previous version keeps serving; a reload that changes
// nothing keeps the serial.
func TestReloadOnFileChange(t *testing.T) {
	ts := startServer(t, baseConfig(""), func(o *Options) {
		o.WatchInterval = 20 * time.Millisecond
		o.Debounce = 50 * time.Millisecond
	})
	first := ts.serial()
	ts.write(strings.Replace(baseConfig(""), "192.0.2.1,", "192.0.2.7,", 1))
	waitFor(t, "the new address", func() bool {
		r := ts.ask("udp", "echo.example.test.", dns.TypeA, 0)
		return len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == "192.0.2.7"
	})
	second := ts.serial()
	if !serialGreater(second, first) {
		t.Fatalf("serial %d after a change, was %d", second, first)
	}
	r := ts.ask("udp", "example.test.", dns.TypeSOA, 0)
	if r.Answer[0].(*dns.SOA).Serial != second {
		t.Errorf("served serial %v, want %d", r.Answer[0], second)
	}

	// Invalid: a typo in a service config. Rejected, logged with its
	// position, the old zone keeps serving.
	ts.write(strings.Replace(baseConfig(""), "round_robin: {}", "round_robin: 50", 1))
	waitFor(t, "the rejection", func() bool { return strings.Contains(ts.logs.String(), "config rejected") })
	if !strings.Contains(ts.logs.String(), "line=") || ts.serial() != second {
		t.Errorf("rejected config: serial %d, log:\n%s", ts.serial(), ts.logs.String())
	}
	r = ts.ask("udp", "echo.example.test.", dns.TypeA, 0)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.7" {
		t.Errorf("after a rejected reload: %v", r)
	}
	if err := ts.Reload(); err == nil {
		t.Error("Reload of an invalid config returned no error")
	} else {
		var ce *ConfigError
		if !errors.As(err, &ce) || len(ce.Diagnostics) == 0 || ce.Diagnostics[0].Line == 0 {
			t.Errorf("Reload error %#v", err)
		}
	}

	// Only a comment changes: nothing is published.
	ts.write(strings.Replace(baseConfig(""), "192.0.2.1,", "192.0.2.7,", 1) + "# a comment\n")
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	if ts.serial() != second {
		t.Errorf("serial changed for a comment: %d -> %d", second, ts.serial())
	}
}

// TestSerialPersistence: serials survive restarts, stay put for unchanged
// content and increase for changed content even when the clock goes back.
func TestSerialPersistence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte(baseConfig("")), 0o644)
	clock := time.Unix(2_000_000_000, 0)
	start := func() *Server {
		s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger(), Now: func() time.Time { return clock }})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1 := start().Serials()["example.test."]
	if s1 != 2_000_000_000 {
		t.Fatalf("first serial %d, want the clock", s1)
	}
	if _, err := os.Stat(file + ".serial"); err != nil {
		t.Fatalf("no state file: %v", err)
	}
	clock = clock.Add(time.Hour)
	if s2 := start().Serials()["example.test."]; s2 != s1 {
		t.Errorf("unchanged zone after a restart: serial %d, was %d", s2, s1)
	}
	// The clock goes back a day and the zone changes: still greater.
	clock = clock.Add(-24 * time.Hour)
	os.WriteFile(file, []byte(strings.Replace(baseConfig(""), "ttl: 30", "ttl: 31", 1)), 0o644)
	s3 := start().Serials()["example.test."]
	if s3 != s1+1 {
		t.Errorf("changed zone with the clock behind: serial %d, want %d", s3, s1+1)
	}
	// Changed back to the first content: a new version, so a new serial.
	os.WriteFile(file, []byte(baseConfig("")), 0o644)
	if s4 := start().Serials()["example.test."]; !serialGreater(s4, s3) {
		t.Errorf("serial went from %d to %d", s3, s4)
	}
}

// TestNextSerialMatchesServe: the zone command prints the serial serve uses.
func TestNextSerialMatchesServe(t *testing.T) {
	ts := startServer(t, baseConfig(""), nil)
	z := ts.snap.Load().zones["example.test."].cur
	got, err := NextSerial(ts.file+".serial", "example.test.", z.Digest(), time.Now())
	if err != nil || got != z.Serial() {
		t.Errorf("NextSerial = %d, %v; serve has %d", got, err, z.Serial())
	}
}

// versionConfig makes version v of a zone in which every record says v:
// the TXT names service svc.V<v>, the A record is 10.0.<v>, and the TTLs
// are 100+v (services) and 1000+v (zone, so negative answers too).
func versionConfig(v int) string {
	return fmt.Sprintf(`
zones:
  - origin: example.test.
    ttl: %d
    soa: {minimum: 1d}
    nameservers: [ns.example.net.]
    services:
      - name: echo
        ttl: %d
        addresses: [10.0.%d.%d]
        serviceConfig: {methodConfig: [{name: [{service: svc.V%d}], timeout: 1s}]}
`, 1000+v, 100+v, v/256, v%256, v)
}

var invalidConfigs = []string{
	"zones: [{origin: example.test.\n",                                      // YAML syntax
	strings.Replace(versionConfig(1), "timeout: 1s", "timeout: 1m", 1),      // bad service config
	strings.Replace(versionConfig(1), "10.0.0.1", "10.0.0.256", 1),          // bad address
	strings.Replace(versionConfig(1), "name: echo", "name: echo.other.", 1), // outside the zone
}

// TestReloadUnderLoad hammers the server over UDP and TCP while valid and
// invalid configs are swapped in. No query may fail, every answer must
// come from one version (the TXT, address, TTLs and serial of a response
// all agree), a version's serial never changes, and no client sees an
// older version after a newer one.
func TestReloadUnderLoad(t *testing.T) {
	ts := startServer(t, versionConfig(1), nil)
	const versions = 40
	var (
		stop     atomic.Bool
		queries  atomic.Int64
		mu       sync.Mutex
		serialOf = map[int]uint32{}
		wg       sync.WaitGroup
	)
	errs := make(chan error, 100)
	fail := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format, args...):
		default:
		}
	}
	checkSerial := func(v int, serial uint32) {
		mu.Lock()
		defer mu.Unlock()
		if s, ok := serialOf[v]; ok && s != serial {
			fail("version %d seen with serials %d and %d", v, s, serial)
		}
		serialOf[v] = serial
	}
	for w := 0; w < 4; w++ {
		proto := []string{"udp", "tcp"}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: proto, Timeout: 2 * time.Second}
			conn, err := c.Dial(ts.addr)
			if err != nil {
				fail("dial: %v", err)
				return
			}
			defer conn.Close()
			seen := 0
			for i := 0; !stop.Load(); i++ {
				m := new(dns.Msg)
				switch i % 3 {
				case 0:
					m.SetQuestion("_grpc_config.echo.example.test.", dns.TypeTXT)
				case 1:
					m.SetQuestion("echo.example.test.", dns.TypeA)
				case 2:
					m.SetQuestion(fmt.Sprintf("nope%d.example.test.", i), dns.TypeA)
				}
				r, _, err := c.ExchangeWithConn(m, conn)
				if err != nil {
					fail("%s query %d: %v", proto, i, err)
					return
				}
				queries.Add(1)
				var v int
				switch i % 3 {
				case 0:
					if len(r.Answer) != 1 {
						fail("TXT: %v", r)
						return
					}
					txt := strings.Join(zone.RawTXT(r.Answer[0].(*dns.TXT)), "")
					fmt.Sscanf(txt[strings.Index(txt, "svc.V")+5:], "%d", &v)
					if ttl := int(r.Answer[0].Header().Ttl); ttl != 100+v {
						fail("mixed versions: TXT of version %d with TTL %d", v, ttl)
					}
				case 1:
					if len(r.Answer) != 1 {
						fail("A: %v", r)
						return
					}
					a := r.Answer[0].(*dns.A).A.To4()
					v = int(a[2])*256 + int(a[3])
					if ttl := int(r.Answer[0].Header().Ttl); ttl != 100+v {
						fail("mixed versions: address of version %d with TTL %d", v, ttl)
					}
				case 2:
					if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 {
						fail("NXDOMAIN: %v", r)
						return
					}
					soa := r.Ns[0].(*dns.SOA)
					v = int(soa.Hdr.Ttl) - 1000
					checkSerial(v, soa.Serial)
				}
				if v < seen {
					fail("%s client saw version %d after %d", proto, v, seen)
				}
				seen = v
			}
		}()
	}
	rejected := 0
	for v := 2; v <= versions; v++ {
		if v%3 == 0 {
			ts.write(invalidConfigs[v%len(invalidConfigs)])
			if err := ts.Reload(); err == nil {
				t.Errorf("invalid config %d accepted", v%len(invalidConfigs))
			}
			rejected++
		}
		ts.write(versionConfig(v))
		if err := ts.Reload(); err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d queries during %d reloads (%d rejected)", queries.Load(), versions-1+rejected, rejected)
	if queries.Load() < 200 {
		t.Errorf("only %d queries ran", queries.Load())
	}
	if len(serialOf) < versions/4 {
		t.Errorf("clients saw only %d of %d versions: the test did not overlap queries and reloads", len(serialOf), versions)
	}
	var last uint32
	for v := 1; v <= versions; v++ {
		if s, ok := serialOf[v]; ok {
			if last != 0 && !serialGreater(s, last) {
				t.Errorf("version %d has serial %d, not above %d", v, s, last)
			}
			last = s
		}
	}
}
