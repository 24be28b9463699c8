package serviceconfig

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/balancer/grpclb" // register the policies our rules know
	_ "google.golang.org/grpc/balancer/leastrequest"
	_ "google.golang.org/grpc/balancer/ringhash"
	_ "google.golang.org/grpc/balancer/weightedroundrobin"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
)

// grpcGoLaxer lists the corpus records whose service config grpc-go accepts
// although the gRPC spec (and so our rules) reject it. We stay strict: a
// config that only grpc-go accepts breaks the other clients reading the
// same record. Every entry says why.
var grpcGoLaxer = map[string]string{
	"sc-message-size-negative.json":        "grpc-go accepts a negative size limit, which rejects every message",
	"sc-hedging-missing-max.json":          "grpc-go ignores hedgingPolicy entirely (it does not implement hedging)",
	"sc-retry-and-hedging.json":            "grpc-go ignores hedgingPolicy, so it never sees the conflict gRFC A6 forbids",
	"sc-lb-policy-unknown.json":            "grpc-go silently falls back to pick_first for an unknown loadBalancingPolicy; C-core rejects it",
	"sc-lb-config-not-object.json":         "grpc-go ignores the config of round_robin, which takes none",
	"sc-retry-throttling-zero-tokens.json": "grpc-go checks retryThrottling only when methodConfig is present",
	"sc-retry-throttling-1001.json":        "grpc-go checks retryThrottling only when methodConfig is present",
	"sc-retry-throttling-ratio-zero.json":  "grpc-go checks retryThrottling only when methodConfig is present",
	"sc-retry-throttling-missing.json":     "grpc-go checks retryThrottling only when methodConfig is present",
	"sc-header-extraction-bad-name.json":   "headerExtraction is our extension; grpc-go ignores unknown fields",
	"sc-header-extraction-duplicate.json":  "headerExtraction is our extension; grpc-go ignores unknown fields",
	"sc-header-extraction-delimiter.json":  "headerExtraction is our extension; grpc-go ignores unknown fields",
	"sc-header-extraction-keep-zero.json":  "headerExtraction is our extension; grpc-go ignores unknown fields",
}

// grpcGoMayReject reports whether one of our warnings says that grpc-go
// refuses the config although the spec allows it, or reads it differently
// (field-case: grpc-go reads a field name in another case as the field).
func grpcGoMayReject(ds Diagnostics) bool {
	for _, d := range ds {
		if d.refusedBy&clientGo != 0 || d.Code == "field-case" {
			return true
		}
	}
	return false
}

// TestDifferentialGrpcGo checks every service config of the corpus against
// grpc-go's own parser (grpc.NewClient with WithDefaultServiceConfig):
// whatever we accept, grpc-go accepts, unless one of our warnings says it
// will not; whatever we reject and grpc-go accepts is listed above.
func TestDifferentialGrpcGo(t *testing.T) {
	dir := "../testdata/corpus"
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	laxSeen := map[string]bool{}
	checked := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name := strings.Fields(line)[0]
		text, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range corpusServiceConfigs(text) {
			checked++
			ours := ValidateServiceConfig(cfg)
			theirsErr := grpcGoParse(cfg)
			warnsReject := grpcGoMayReject(ours)
			switch {
			case !ours.HasErrors() && !warnsReject && theirsErr != nil:
				t.Errorf("%s: we accept %s, grpc-go rejects it: %v", name, cfg, theirsErr)
			case ours.HasErrors() && theirsErr == nil:
				if _, ok := grpcGoLaxer[name]; !ok {
					t.Errorf("%s: grpc-go accepts %s, which we reject (%v); list it in grpcGoLaxer with the reason", name, cfg, ours.Err())
				}
				laxSeen[name] = true
			}
		}
	}
	for name := range grpcGoLaxer {
		if !laxSeen[name] {
			t.Errorf("grpcGoLaxer lists %s, but grpc-go rejects it too (or it is gone): remove the entry", name)
		}
	}
	if checked < 60 {
		t.Errorf("only %d service configs checked", checked)
	}
}

func grpcGoParse(cfg []byte) error {
	cc, err := grpc.NewClient("passthrough:///unused",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(string(cfg)))
	if err != nil {
		return err
	}
	return cc.Close()
}

// corpusServiceConfigs returns the service config objects in a corpus
// record, whatever its kind and even when the record around them is
// invalid.
func corpusServiceConfigs(text []byte) [][]byte {
	var value []byte
	switch DetectKind(text) {
	case KindChoices, KindServiceConfig:
		value = text
	case KindTXT:
		recs, _, bad := textRecords(text)
		if bad != nil {
			return nil
		}
		v, err := DecodeTXT(recs)
		if err != nil {
			return nil
		}
		value = v
	default:
		return nil
	}
	tr, err := jtree.Parse(value)
	if err != nil {
		return nil
	}
	switch tr.Nodes[0].Kind {
	case jtree.Object:
		return [][]byte{tr.Raw(0)}
	case jtree.Array:
		var out [][]byte
		for e := tr.Nodes[0].First; e >= 0; e = tr.Nodes[e].Next {
			if tr.Nodes[e].Kind == jtree.Object {
				if v := tr.Get(e, "serviceConfig"); v >= 0 && tr.Nodes[v].Kind == jtree.Object {
					out = append(out, tr.Raw(v))
				}
			}
		}
		return out
	}
	return nil
}
