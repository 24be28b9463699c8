//go:build faults

package faults

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// holdEnv makes the test binary hold connections instead of running tests
// (see TestMain): "N ADDR…".
const holdEnv = "FAULTS_HOLD_CONNECTIONS"

// holdConnections starts a process that keeps n connections to each of
// addrs open, opening a new one whenever the server closes one: the even
// ones send nothing, the odd ones a request header a byte every 100 ms,
// never finishing it. A process of its own, as an attacker would be: in
// the test's, the flood starves the test's own clients. stop ends it and
// returns how many connections it opened to each address.
func holdConnections(t *testing.T, n int, addrs ...string) (stop func() []int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"="+strconv.Itoa(n)+" "+strings.Join(addrs, " "))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var opened []int64
	stop = func() []int64 {
		once.Do(func() {
			in.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("the process holding connections: %v\n%s", err, out.String())
			}
			for _, f := range strings.Fields(out.String()) {
				if v, err := strconv.ParseInt(f, 10, 64); err == nil {
					opened = append(opened, v)
				}
			}
		})
		return opened
	}
	t.Cleanup(func() { stop() })
	return stop
}

// holdMain is the process holdConnections starts: it holds connections
// until its standard input closes, then prints how many it opened to
// each address.
func holdMain(spec string) int {
	f := strings.Fields(spec)
	n, err := strconv.Atoi(f[0])
	if err != nil || len(f) < 2 {
		fmt.Fprintf(os.Stderr, "%s=%q: want N ADDR…\n", holdEnv, spec)
		return 2
	}
	const header = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "
	stop := make(chan struct{})
	var wg sync.WaitGroup
	opened := make([]atomic.Int64, len(f)-1)
	for a, addr := range f[1:] {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 64)
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, err := net.DialTimeout("tcp", addr, time.Second)
					if err != nil {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					opened[a].Add(1)
					for b := 0; ; b++ {
						if i%2 == 1 {
							ch := byte('a')
							if b < len(header) {
								ch = header[b]
							}
							c.Write([]byte{ch})
						}
						c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
						_, err := c.Read(buf)
						if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
							break // closed by the server
						}
						select {
						case <-stop:
							c.Close()
							return
						default:
						}
					}
					c.Close()
				}
			}()
		}
	}
	io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	close(stop)
	wg.Wait()
	for a := range opened {
		fmt.Println(opened[a].Load())
	}
	return 0
}
