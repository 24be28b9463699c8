package whogets

import (
	"os"
	"strings"
	"testing"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Dynamic-parameter variants are named, and each gets its rows; every
// row covers the 100 buckets once, and agrees with serviceconfig.Choose.
func TestSplitNamesVariants(t *testing.T) {
	text, err := os.ReadFile("../../testdata/corpus/dp-tp2-basic.json")
	if err != nil {
		t.Fatal(err)
	}
	rec, ds := sc.Publish(sc.Source{Text: text}, sc.PublishOptions{Clients: sc.ClientOurs})
	if rec == nil {
		t.Fatal(ds)
	}
	sp, err := Of("_grpc_config.x.test.", rec.TXT)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Variants) == 0 || !strings.Contains(strings.Join(sp.Variants, " "), "env=prod") {
		t.Errorf("variants %v", sp.Variants)
	}
	withParams := 0
	for _, r := range sp.Rows {
		next, sum := 1, 0
		for _, s := range r.Segments {
			if s.From != next || s.To-s.From+1 != s.Percent {
				t.Errorf("%s: segment %+v after bucket %d", r.Who, s, next-1)
			}
			next, sum = s.To+1, sum+s.Percent
			for _, b := range []int{s.From, s.To} {
				c := r.Client
				c.Bucket = b
				o := sc.Choose(sc.Answer{Records: [][]string{rec.TXT}}, c)
				if o.Choice != s.Choice {
					t.Errorf("%s, bucket %d: drawn as choice %d, Choose says %d", r.Who, b, s.Choice, o.Choice)
				}
			}
		}
		if sum != 100 {
			t.Errorf("%s adds up to %d", r.Who, sum)
		}
		if strings.Contains(r.Who, " with ") {
			withParams++
		}
	}
	if withParams == 0 {
		t.Error("no row for a variant's clients")
	}
}
