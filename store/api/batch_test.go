package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

const batchPath = "/v1/zones/example.test/services:batch"

// batchOf is a batch of services s<from>..s<to-1>, their specs as
// svcSpec gives them (with delta added to the timeout's seconds).
func batchOf(from, to, delta int) map[string]any {
	var items []any
	for i := from; i < to; i++ {
		items = append(items, map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("s%d", i), "labels": map[string]string{"n": fmt.Sprint(i % 3)}},
			"spec": json.RawMessage(svcSpec(i + delta))})
	}
	return map[string]any{"kind": "ServiceList", "items": items}
}

func batchResult(t *testing.T, r response) store.BatchResult {
	t.Helper()
	var res store.BatchResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatalf("not a batch result: %v: %s", err, r.body)
	}
	return res
}

// TestBatch: a batch of services is stored as the same PUTs one by one
// would store them, in one transaction on the embedded store and in
// chunks within etcd's limits; a batch with an invalid, a misnamed or a
// twice-named item, or a failed precondition, stores nothing of its
// transaction, and says which item.
func TestBatch(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			srv := serve(t, b.open(t, store.Options{History: 1000, BookmarkInterval: 200 * time.Millisecond}))
			srv.putZone("example.test")
			before := srv.putService("example.test", "s0", svcSpec(0))
			w, _ := srv.watch(services + "?watch=true&resourceVersion=" + fmt.Sprint(before))

			res := batchResult(t, srv.must(200, "POST", batchPath, batchOf(0, 300, 0)))
			wantTxns := 1
			if b.name == "etcd" {
				wantTxns = 3 // 126 items a transaction: etcd's 128 operations, less the zone's two
			}
			if res.Created != 299 || res.Configured != 1 || res.Unchanged != 0 || res.Transactions != wantTxns {
				t.Fatalf("batch of 300 with s0 stored already (without labels): %+v, want 299 created, 1 configured, %d transactions", res, wantTxns)
			}
			// Every item is stored as a PUT stores it, labels too.
			for _, i := range []int{1, 150, 299} {
				o := srv.must(200, "GET", fmt.Sprintf("%s/s%d", services, i), nil).object(t)
				if string(o.Spec) != svcSpec(i) || o.Metadata.Labels["n"] != fmt.Sprint(i%3) {
					t.Errorf("s%d stored as %s %v", i, o.Spec, o.Metadata.Labels)
				}
			}
			if l := srv.must(200, "GET", services, nil).list(t); len(l.Items) != 300 || l.Metadata.ResourceVersion != res.ResourceVersion {
				t.Errorf("list after the batch: %d items at %s, want 300 at %s", len(l.Items), l.Metadata.ResourceVersion, res.ResourceVersion)
			}
			added := 0
			for added < 300 {
				if typ, o := w.next(); typ != store.Added && (typ != store.Modified || o.Metadata.Name != "s0") {
					t.Fatalf("watch: %s %s, want ADDED (MODIFIED for s0)", typ, o.Metadata.Name)
				}
				added++
			}

			// Again, with one changed: one configured, the rest unchanged.
			again := batchOf(0, 300, 0)
			again["items"].([]any)[7] = map[string]any{"metadata": map[string]any{"name": "s7", "labels": map[string]string{"n": "1"}}, "spec": json.RawMessage(svcSpec(1000))}
			res = batchResult(t, srv.must(200, "POST", batchPath, again))
			if res.Configured != 1 || res.Unchanged != 299 || res.Transactions != 1 {
				t.Fatalf("batch with one item changed: %+v", res)
			}
			last := res.ResourceVersion

			// Refused whole: nothing of the batch is stored.
			unchanged := func(what string) {
				t.Helper()
				if l := srv.must(200, "GET", services, nil).list(t); len(l.Items) != 300 || l.Metadata.ResourceVersion != last {
					t.Errorf("%s: %d services at %s after the refusal, want 300 at %s", what, len(l.Items), l.Metadata.ResourceVersion, last)
				}
			}
			bad := batchOf(300, 310, 0)
			bad["items"].([]any)[4] = map[string]any{"metadata": map[string]any{"name": "s304"},
				"spec": json.RawMessage(`{"addresses":["192.0.2.1"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"soon"}]}}`)}
			e := srv.must(422, "POST", batchPath, bad).err(t)
			if len(e.Diagnostics) == 0 || !strings.HasPrefix(e.Diagnostics[0].Path, "/items/4/spec/serviceConfig/methodConfig/0/timeout") || !strings.Contains(e.Message, "s304") {
				t.Errorf("invalid item: %s %+v", e.Message, e.Diagnostics)
			}
			unchanged("an invalid item")
			dup := batchOf(300, 303, 0)
			dup["items"] = append(dup["items"].([]any), dup["items"].([]any)[1])
			if e := srv.must(400, "POST", batchPath, dup).err(t); !strings.Contains(e.Message, "items 1 and 3") {
				t.Errorf("twice-named: %s", e.Message)
			}
			unchanged("an item given twice")
			noName := batchOf(300, 303, 0)
			noName["items"].([]any)[2].(map[string]any)["metadata"] = map[string]any{}
			if e := srv.must(400, "POST", batchPath, noName).err(t); !strings.Contains(e.Message, "item 2") {
				t.Errorf("no name: %s", e.Message)
			}
			unchanged("an item without a name")
			stale := batchOf(0, 5, 7)
			stale["items"].([]any)[3].(map[string]any)["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(before)
			if e := srv.must(409, "POST", batchPath, stale).err(t); !strings.Contains(e.Message, "service s3") {
				t.Errorf("stale precondition: %s", e.Message)
			}
			unchanged("a failed precondition")
			if e := srv.must(400, "POST", batchPath, `{"items":[{"metadata":{"name":"a"},"spec":{},"Spec":{}}]}`).err(t); !strings.Contains(e.Message, "/items/0/Spec") {
				t.Errorf("a key in another case: %s", e.Message)
			}
			srv.must(405, "PUT", batchPath, batchOf(0, 1, 0))
			srv.must(404, "POST", "/v1/zones/nowhere.test/services:batch", batchOf(0, 1, 0))
		})
	}
}
