package dnspub

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// TestStoreResyncKeepsReady: a SIGHUP (Reload) in store mode reads the
// whole store again while the last snapshot keeps being served and the
// store answers, so the server stays ready throughout (docs/store.md:
// /readyz is 200 when a snapshot of the store is served and the store
// answers). TestStoreSourceMatchesScratch found it reporting "the store
// has not been read yet" during such a read.
func TestStoreResyncKeepsReady(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() }) // once the server stopped
	putZone(t, st, "example.test", storeZoneSpec)
	// Enough services that reading the store again takes a while.
	var objs []*store.Object
	for i := range 2000 {
		objs = append(objs, &store.Object{Metadata: store.Metadata{Name: fmt.Sprintf("s%d", i)}, Spec: json.RawMessage(storeService(i))})
	}
	if _, err := st.PutServices(context.Background(), "example.test", objs); err != nil {
		t.Fatal(err)
	}
	ts := startStoreServer(t, st)
	if err := ts.Ready(); err != nil {
		t.Fatalf("not ready after start: %v", err)
	}
	for i := range 20 {
		if err := ts.Reload(); err != nil {
			t.Fatal(err)
		}
		// Until the read is picked up and done, and a while after.
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
			if err := ts.Ready(); err != nil {
				t.Fatalf("SIGHUP %d: not ready while the last snapshot is served and the store answers: %v", i+1, err)
			}
		}
	}
}
