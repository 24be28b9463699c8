package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

func testList(n int) *List {
	rem := int64(7)
	l := &List{Metadata: ListMeta{ResourceVersion: "123456", Continue: "abc", RemainingItemCount: &rem}}
	for i := range n {
		o := &Object{Metadata: Metadata{Name: fmt.Sprintf("svc-%d", i), Zone: "fleet.test", ResourceVersion: "99999"},
			Spec: json.RawMessage(fmt.Sprintf(`{"addresses":["192.0.2.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"fleet.Service%d"}],"timeout":"1s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}],"loadBalancingConfig":[{"round_robin":{}}]}}`, i%250, i))}
		switch i % 4 {
		case 1:
			o.Metadata.Labels = map[string]string{"team": "a", "app": "b"}
		case 2:
			o.Kind, o.Metadata.Zone = PolicyKind, ""
			o.Metadata.Labels = map[string]string{"odd key\"<>&\u2028\xff": "v\n\t\\"}
		case 3:
			o.Metadata.Annotations = map[string]string{"k8s.io/initial-events-end": "true"}
			o.Metadata.Name = "é"
		}
		l.Items = append(l.Items, o)
	}
	return l
}

// TestListJSON: AppendJSON writes what json.Marshal writes (specs are
// stored compact, without HTML-sensitive bytes here).
func TestListJSON(t *testing.T) {
	for _, l := range []*List{testList(0), testList(9), {Metadata: ListMeta{ResourceVersion: "1"}}} {
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if l.Items == nil {
			// json.Marshal writes a nil slice as null; lists always
			// carry a slice.
			want = bytes.Replace(want, []byte(`"items":null`), []byte(`"items":[]`), 1)
		}
		if got := l.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
		}
	}
}

// BenchmarkListJSON: a 500-item page, by AppendJSON and by json.Marshal.
func BenchmarkListJSON(b *testing.B) {
	l := testList(500)
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = l.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(l)
		}
	})
}
