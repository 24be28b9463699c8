package zone_test

import (
	"reflect"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// TestUpdateLeavesConfigAlone: Update does not write into the config it is
// given (it used to put the previous version's equal services in it),
// since a model.Parser keeps the services of that config for the next
// text: a later parse must give exactly what Parse gives (found by
// review: a service written without labels came back with the empty
// labels of the equal one before it).
func TestUpdateLeavesConfigAlone(t *testing.T) {
	head := "zones:\n  - origin: a.test.\n    nameservers: [ns.x.]\n"
	a1 := "      - name: a\n        labels: {}\n        addresses: [10.0.0.1]\n"
	a2 := "      - name: a\n        addresses: [10.0.0.1]\n"
	b1 := "      - name: b\n        addresses: [10.0.0.2]\n"
	b2 := "      - name: b\n        addresses: [10.0.0.3]\n"
	var p model.Parser
	c1, _ := p.Parse([]byte(head + "    services:\n" + a1 + b1))
	z1, _ := zone.Update(nil, c1.Zones[0])
	// A comment in the zone's settings: read whole, built with Update.
	v2 := head + "    # c\n    services:\n" + a2 + b1
	c2, _ := p.Parse([]byte(v2))
	zone.Update(z1, c2.Zones[0])
	if want, _ := model.Parse([]byte(v2)); !reflect.DeepEqual(c2, want) {
		t.Fatal("Update changed the config it was given")
	}
	v3 := head + "    # c\n    services:\n" + a2 + b2
	got, _ := p.Parse([]byte(v3))
	if want, _ := model.Parse([]byte(v3)); !reflect.DeepEqual(got, want) {
		t.Fatalf("Parser: a.Labels=%#v; Parse: a.Labels=%#v", got.Zones[0].Services[0].Labels, want.Zones[0].Services[0].Labels)
	}
}
