package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// TestDecodeFastPathIsUnmarshal: values as the store writes them decode
// (without decoding their spec) to what json.Unmarshal makes of them, and
// values of any other shape still decode, or fail naming the key.
func TestDecodeFastPathIsUnmarshal(t *testing.T) {
	var values [][]byte
	for _, labels := range []map[string]string{
		nil,
		{"spec": "x", "a": `,"spec":{"b":1}}`},
		{`"}]\`: `{[\"`, "é": "\u2028"},
	} {
		for _, spec := range []string{`{}`, `{"a":[1,{"b":"}"}],"c":"\"spec\":"}`, `{"addresses":["192.0.2.1"]}`} {
			for _, m := range []storedMeta{{Name: "n", Zone: "z"}, {Name: "n"}, {Name: `a"b<&>\`, Zone: "é\u2028"}, {Name: "", Zone: ""}} {
				m.Labels = labels
				v, err := json.Marshal(stored{Metadata: m, Spec: json.RawMessage(spec)})
				if err != nil {
					t.Fatal(err)
				}
				if _, _, ok := splitStored(v); !ok {
					t.Errorf("splitStored(%s): not split", v)
				}
				values = append(values, v)
			}
		}
	}
	// Other shapes: the slow path.
	values = append(values,
		[]byte(`{"spec":{},"metadata":{"name":"n"}}`),
		[]byte(`{"metadata":{"name":"n"},"spec":{},"extra":1}`),
		[]byte(` {"metadata":{"name":"n"},"spec":{}}`),
		[]byte(`{"metadata":{"name":"n","zone":"z","extra":1},"spec":{}}`),
		[]byte(`{"metadata":{"name":"n" ,"zone":"z"},"spec":{}}`),
		[]byte(`{"metadata":{"zone":"z","name":"n"},"spec":{}}`),
	)
	// Specs jtree refuses and encoding/json reads: read as encoding/json
	// reads them.
	values = append(values,
		[]byte(`{"metadata":{"name":"n"},"spec":{"a":1,"a":2}}`),
		[]byte("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"a\":\"\xff\"}}"),
		[]byte(`{"metadata":{"name":"n"},"spec":{"a":`+strings.Repeat("[", jtree.MaxDepth+1)+strings.Repeat("]", jtree.MaxDepth+1)+`}}`),
	)
	for _, v := range values {
		got, err := decode(kv{key: "s/z/n", value: v, modRev: 7})
		if err != nil {
			t.Errorf("decode(%s): %v", v, err)
			continue
		}
		var st stored
		if err := json.Unmarshal(v, &st); err != nil {
			t.Fatal(err)
		}
		want := &Object{Metadata: Metadata{Name: st.Metadata.Name, Zone: st.Metadata.Zone, Labels: st.Metadata.Labels, ResourceVersion: "7"}, Spec: st.Spec}
		if !reflect.DeepEqual(got.Metadata, want.Metadata) || string(got.Spec) != string(want.Spec) {
			t.Errorf("decode(%s) = %+v %s, want %+v %s", v, got.Metadata, got.Spec, want.Metadata, want.Spec)
		}
	}
	for _, bad := range []string{``, `{"metadata":{"name":"n"},"spec":{`, `{"metadata":"x","spec":{}}`, `{"metadata":{"name":"n"},"spec":{]}`} {
		if _, err := decode(kv{key: "s/z/n", value: []byte(bad), modRev: 7}); err == nil {
			t.Errorf("decode(%q): no error", bad)
		}
	}
}

// FuzzDecode: no stored value makes decode panic (etcd may be shared
// with other writers), and what it reads is what encoding/json reads.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"name":"n","zone":"z"},"spec":{}}`,
		`{"metadata":{"name":"n","zone":"z","labels":{"a":"b"}},"spec":{"x":[1,"}"]}}`,
		`{"metadata":{"name":"a\"b"},"spec":{}}`,
		`{"metadata":{"name":"n"},"spec":{]}`,
		`{"metadata":{"name":"n" ,"zone":"z"},"spec":{}}`,
		`{"metadata":"x","spec":{}}`, ``, `{`, "{\"metadata\":{\"name\":\"\xff\"},\"spec\":{}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := decode(kv{key: "s/z/n", value: v, modRev: 1})
		var st stored
		uerr := json.Unmarshal(v, &st)
		if err != nil {
			return // refused: the slow path said why
		}
		if uerr != nil {
			t.Fatalf("decode accepted %q, which json.Unmarshal refuses: %v", v, uerr)
		}
		if got.Metadata.Name != st.Metadata.Name || got.Metadata.Zone != st.Metadata.Zone || !reflect.DeepEqual(got.Metadata.Labels, st.Metadata.Labels) {
			t.Fatalf("decode(%q) = %+v, json.Unmarshal %+v", v, got.Metadata, st.Metadata)
		}
		// The spec is the one encoding/json reads, but for the blanks
		// around it, which a cut keeps.
		if !bytes.Equal(bytes.TrimSpace(got.Spec), st.Spec) {
			t.Fatalf("decode(%q) reads the spec %q, json.Unmarshal %q", v, got.Spec, st.Spec)
		}
	})
}

// TestItemSpecIsClients: the spec a publisher's item carries is the one a
// client reads, whatever the stored value holds after it (a member after
// "spec", written by another tool), and a value whose spec is not JSON
// is no item at all, as it is no object to a client.
func TestItemSpecIsClients(t *testing.T) {
	for _, v := range []string{
		`{"metadata":{"name":"svc","zone":"example.test"},"spec":{"labels":{"tier":"gold"},"addresses":["192.0.2.1"]},"status":{"x":1}}`,
		`{"metadata":{"name":"svc","zone":"example.test"},"spec":{"addresses":["192.0.2.1"]}}`,
	} {
		k := kv{key: "s/example.test/svc", value: []byte(v), modRev: 3}
		o, err := decode(k)
		if err != nil {
			t.Fatalf("decode(%s): %v", v, err)
		}
		it, ok := itemOf(k, false)
		if !ok || string(it.Spec) != string(o.Spec) {
			t.Errorf("%s: the item's spec %s, a client's %s", v, it.Spec, o.Spec)
		}
	}
	for _, v := range []string{
		`{"metadata":{"name":"svc","zone":"example.test"},"spec":{]}`,
		`{"metadata":{"name":"svc","zone":"example.test"},"spec":{addresses: [192.0.2.1]}}`,
	} {
		k := kv{key: "s/example.test/svc", value: []byte(v), modRev: 3}
		if _, err := decode(k); err == nil {
			t.Errorf("decode(%s): no error", v)
		}
		if it, ok := itemOf(k, false); ok {
			t.Errorf("%s: an item, with the spec %s", v, it.Spec)
		}
	}
}
