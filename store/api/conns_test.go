package api_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/httpserve"
	"github.com/grpc-config-dns/grpc-config-dns/store"
	"github.com/grpc-config-dns/grpc-config-dns/store/api"
)

// TestTokenHoldersKeepTheirConnections: when every connection the admin
// listener allows is taken, new ones close those that never showed a
// token before an administrator's, however long it has been idle. Without
// tokens (on loopback), every API request counts as authenticated.
func TestTokenHoldersKeepTheirConnections(t *testing.T) {
	const token = "0123456789abcdef0123"
	for _, tc := range []struct {
		name   string
		tokens []string
	}{{"token", []string{token}}, {"no tokens", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandler(t, api.Options{Store: openStore(t, store.Options{Location: t.TempDir()}), Tokens: tc.tokens})
			hs, err := httpserve.Listen("127.0.0.1:0", h, httpserve.Limits{MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			go hs.Serve()
			t.Cleanup(func() { hs.Close() })
			dial := func() net.Conn {
				c, err := net.Dial("tcp", hs.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			// do sends a keep-alive request on c and returns its status.
			do := func(c net.Conn, path, auth string) (int, error) {
				c.SetDeadline(time.Now().Add(2 * time.Second))
				req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n"
				if auth != "" {
					req += "Authorization: Bearer " + auth + "\r\n"
				}
				if _, err := io.WriteString(c, req+"\r\n"); err != nil {
					return 0, err
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					return 0, err
				}
				defer resp.Body.Close()
				_, err = io.Copy(io.Discard, resp.Body)
				return resp.StatusCode, err
			}

			admin := dial()
			if code, err := do(admin, "/v1/zones", token); code != 200 {
				t.Fatalf("the administrator's request: %d %v", code, err)
			}
			// Others that never show a token, now idle too.
			for _, path := range []string{"/healthz", "/readyz", "/nowhere"} {
				if code, err := do(dial(), path, ""); code == 0 {
					t.Fatal(err)
				}
			}
			time.Sleep(20 * time.Millisecond)
			for i := range 3 {
				if code, err := do(dial(), "/healthz", ""); code != 200 {
					t.Fatalf("new client %d: %d %v", i+1, code, err)
				}
			}
			if code, err := do(admin, "/v1/zones", token); code != 200 {
				t.Errorf("the administrator's connection was closed before those of clients without a token: %d %v", code, err)
			}
		})
	}
}
