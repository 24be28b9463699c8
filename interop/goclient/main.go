// Command goclient is the grpc-go client of the interop suite
// (interop/run.sh): it probes targets through grpc-go's built-in dns
// resolver (-resolver dns) or ours (-resolver dnsconfig) and reports what
// the published service config did, in the suite's probe protocol
// (interop/README.md).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/grpc-config-dns/grpc-config-dns/internal/testpb"
	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

// request is what the runner sends on stdin.
type request struct {
	Mode    string   `json:"mode"` // "probe" or "watch"
	Port    int      `json:"port"`
	Targets []target `json:"targets"`
	WatchMS int      `json:"watchMs"`
	Key     string   `json:"key"` // makes Flaky keys unique per run
}

type target struct {
	Case string `json:"case"`
	NS   string `json:"ns"`
	Host string `json:"host"`
}

// result is what one target did; the status fields hold gRPC code names.
type result struct {
	Case     string   `json:"case"`
	Fast     string   `json:"fast"`
	Slow     string   `json:"slow"`
	SlowMS   int64    `json:"slowMs"`
	Flaky    string   `json:"flaky"`
	Backends []string `json:"backends"`
	Detail   string   `json:"detail,omitempty"`
}

func main() {
	which := flag.String("resolver", "dns", "dns (grpc-go's built-in resolver) or dnsconfig (ours)")
	flag.Parse()
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fail("reading the request on stdin: %v", err)
	}
	c := &client{which: *which, port: req.Port, key: req.Key}
	switch *which {
	case "dns":
	case "dnsconfig":
		c.builder = resolver.NewBuilder(resolver.Options{})
	default:
		fail("-resolver %q: want dns or dnsconfig", *which)
	}
	out := json.NewEncoder(os.Stdout)
	switch req.Mode {
	case "probe":
		results := make([]result, len(req.Targets))
		var wg sync.WaitGroup
		for i, t := range req.Targets {
			wg.Go(func() { results[i] = c.probe(t) })
		}
		wg.Wait()
		name := map[string]string{"dns": "grpc-go", "dnsconfig": "grpc-config-dns"}[*which]
		// The host name both resolvers match clientHostname with.
		host, _ := os.Hostname()
		_ = out.Encode(map[string]any{"client": name, "version": grpc.Version, "hostname": host, "results": results})
	case "watch":
		if len(req.Targets) != 1 {
			fail("watch takes one target, got %d", len(req.Targets))
		}
		c.watch(req.Targets[0], time.Duration(req.WatchMS)*time.Millisecond, out)
	default:
		fail("mode %q: want probe or watch", req.Mode)
	}
}

type client struct {
	which   string
	port    int
	key     string
	builder *resolver.Builder
}

func (c *client) dial(t target) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	scheme := "dns"
	if c.builder != nil {
		scheme = resolver.Scheme
		opts = append(opts, c.builder.DialOptions()...)
	}
	return grpc.NewClient(fmt.Sprintf("%s://%s/%s:%d", scheme, t.NS, t.Host, c.port), opts...)
}

// probe runs the suite's four probes on a new channel.
func (c *client) probe(t target) result {
	r := result{Case: t.Case, Backends: []string{}}
	conn, err := c.dial(t)
	if err != nil {
		r.Detail = err.Error()
		return r
	}
	defer conn.Close()
	echo := testpb.NewEchoClient(conn)
	call := func(f func(context.Context) error) string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := f(ctx)
		if err != nil && r.Detail == "" {
			r.Detail = err.Error()
		}
		return codeName(status.Code(err))
	}
	r.Fast = call(func(ctx context.Context) error {
		_, err := echo.Echo(ctx, &testpb.EchoRequest{})
		return err
	})
	seen := map[string]bool{}
	for range 30 {
		var md metadata.MD
		call(func(ctx context.Context) error {
			_, err := echo.Echo(ctx, &testpb.EchoRequest{}, grpc.Header(&md))
			return err
		})
		for _, b := range md.Get("backend") {
			if !seen[b] {
				seen[b] = true
				r.Backends = append(r.Backends, b)
			}
		}
		time.Sleep(15 * time.Millisecond)
	}
	start := time.Now()
	r.Slow = call(func(ctx context.Context) error {
		_, err := echo.Slow(ctx, &testpb.EchoRequest{SleepMs: 5000})
		return err
	})
	r.SlowMS = time.Since(start).Milliseconds()
	r.Flaky = call(func(ctx context.Context) error {
		_, err := echo.Flaky(ctx, &testpb.EchoRequest{FailFirst: 2, Key: c.which + "/" + t.Case + "/" + c.key})
		return err
	})
	return r
}

// watch keeps one channel and calls Flaky (failing once per key) until a
// published retry policy makes it succeed, printing {"event":"ready"}
// after the first call fails as it should without a config, and
// {"event":"applied"} or {"event":"timeout"} at the end.
func (c *client) watch(t target, limit time.Duration, out *json.Encoder) {
	conn, err := c.dial(t)
	if err != nil {
		fail("%v", err)
	}
	defer conn.Close()
	echo := testpb.NewEchoClient(conn)
	n := 0
	flaky := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n++
		_, err := echo.Flaky(ctx, &testpb.EchoRequest{FailFirst: 1, Key: fmt.Sprintf("%s/watch/%s/%d", c.which, c.key, n)})
		return err
	}
	if err := flaky(); status.Code(err) != codes.Unavailable {
		_ = out.Encode(map[string]string{"event": "error", "detail": fmt.Sprintf("first call: %v, want UNAVAILABLE", err)})
		return
	}
	_ = out.Encode(map[string]string{"event": "ready"})
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if err := flaky(); err == nil {
			_ = out.Encode(map[string]string{"event": "applied"})
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = out.Encode(map[string]string{"event": "timeout"})
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "goclient: "+format+"\n", args...)
	os.Exit(2)
}

// codeName is the canonical name of a status code ("DEADLINE_EXCEEDED"),
// as the other clients print it; grpc-go's String() is "DeadlineExceeded",
// and spells CANCELLED with one L.
func codeName(c codes.Code) string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return c.String()
}

var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
	codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
	codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
	codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
	codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
	codes.Unauthenticated: "UNAUTHENTICATED",
}
