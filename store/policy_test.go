package store

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

const (
	testZoneSpec   = `{"ttl":"30s","nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`
	hedgedLabelled = `{"labels":{"team":"a"},"addresses":["192.0.2.7"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"0.1s"}}]}}`
	retriesTeamA   = `{"targetRef":{"kind":"Service","labels":{"team":"a"}},"default":{"methodConfig":[{"name":[{"service":"s"}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}`
)

func openZone(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Options{Location: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, _, err := s.PutZone(ctx, "example.test", &Object{Spec: json.RawMessage(testZoneSpec)}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLegacySpecLabels: a service stored before labels moved to metadata
// (its labels in its spec) is selected by its spec's labels, so a label
// policy that would break it is refused.
func TestLegacySpecLabels(t *testing.T) {
	ctx := context.Background()
	s := openZone(t)
	v, _ := json.Marshal(stored{Metadata: storedMeta{Name: "svc", Zone: "example.test"}, Spec: json.RawMessage(hedgedLabelled)})
	if res, err := s.b.txn(ctx, &txn{puts: []kvPut{{serviceKey("example.test", "svc"), v}}}); err != nil || !res.ok {
		t.Fatal(err)
	}
	_, _, err := s.PutPolicy(ctx, "example.test", "retries", &Object{Spec: json.RawMessage(retriesTeamA)})
	var e *Error
	if !errors.As(err, &e) || e.Code != http.StatusUnprocessableEntity {
		t.Fatalf("a label policy breaking a service labelled in its spec: %v", err)
	}
	zc, _, _, err := s.zoneConfig(ctx, "example.test")
	if err != nil {
		t.Fatal(err)
	}
	if _, ds := model.ValidateService(zc, "svc", nil, json.RawMessage(hedgedLabelled), nil); ds.HasErrors() {
		t.Fatalf("the stored service is invalid: %v", ds)
	}
}

// TestUnreadableStoredPolicy: a stored policy this server cannot read
// (another version's, or corrupt) blocks writes to its zone with a 409
// that says so, and can still be replaced or deleted.
func TestUnreadableStoredPolicy(t *testing.T) {
	ctx := context.Background()
	for _, fix := range []string{"replace", "delete"} {
		t.Run(fix, func(t *testing.T) {
			s := openZone(t)
			v, _ := json.Marshal(stored{Metadata: storedMeta{Name: "bad", Zone: "example.test"}, Spec: json.RawMessage(`{"targetRef":{"kind":"Nope"},"default":{}}`)})
			if res, err := s.b.txn(ctx, &txn{puts: []kvPut{{policyKey("example.test", "bad"), v}, {policyMarkerKey("example.test"), nil}}}); err != nil || !res.ok {
				t.Fatal(err)
			}
			_, _, err := s.PutService(ctx, "example.test", "echo", &Object{Spec: json.RawMessage(`{"addresses":["192.0.2.1"]}`)})
			var e *Error
			if !errors.As(err, &e) || e.Code != http.StatusConflict {
				t.Fatalf("a service write beside an unreadable policy: %v", err)
			}
			if fix == "replace" {
				_, _, err = s.PutPolicy(ctx, "example.test", "bad", &Object{Spec: json.RawMessage(retriesTeamA)})
			} else {
				_, err = s.DeletePolicy(ctx, "example.test", "bad", "")
			}
			if err != nil {
				t.Fatalf("%s the unreadable policy: %v", fix, err)
			}
			if _, _, err := s.PutService(ctx, "example.test", "echo", &Object{Spec: json.RawMessage(`{"addresses":["192.0.2.1"]}`)}); err != nil {
				t.Fatalf("a service write after: %v", err)
			}
		})
	}
}
