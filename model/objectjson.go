package model

import (
	"go.yaml.in/yaml/v3"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// NodeJSON converts a YAML value (an object of the store read from a
// file, say) to compact JSON as the publisher reads YAML: keys in the
// order written (a spec written back in another order would be another
// value to a store that compares bytes, and another TXT record), numbers
// as written, and a key twice, or a value JSON cannot hold exactly,
// refused with its diagnostics (placed in src, the text n was read
// from).
func NodeJSON(src []byte, n *yaml.Node) ([]byte, sc.Diagnostics) {
	d := newDoc(src)
	j, ok := d.toJSON(n, "")
	if !ok {
		return nil, d.diagnostics()
	}
	return append([]byte(nil), j.text...), nil
}
