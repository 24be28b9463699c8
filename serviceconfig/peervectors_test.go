package serviceconfig

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "google.golang.org/grpc/balancer/randomsubsetting" // every balancer a DNS client can import
	_ "google.golang.org/grpc/balancer/rls"
)

// The differential suite: service configs and choice lists taken from the
// test suites of grpc-go, C-core, grpc-java and grpc-js (testdata/peers,
// described in docs/peers.md). Each vector names its source test, what
// each client does with it, and the verdict; where the clients disagree,
// the spec text that decides.

type peerFile struct {
	Repo    string       `json:"repo"`
	Commit  string       `json:"commit"`
	Note    string       `json:"note"`
	Vectors []peerVector `json:"vectors"`
}

type peerVector struct {
	ID     string `json:"id"`
	File   string `json:"file"`
	Test   string `json:"test"`
	Family string `json:"family"`
	// Kind is service-config, lb-config (Input is the config of Policy),
	// choices (a JSON list) or txt (a TXT record value).
	Kind      string            `json:"kind"`
	Policy    string            `json:"policy"`
	Input     string            `json:"input"`
	Peers     map[string]string `json:"peers"`
	Verdict   string            `json:"verdict"`
	DecidedBy string            `json:"decidedBy"`
	Ambiguous string            `json:"ambiguous"`
	Warn      []string          `json:"warn"`
	Select    []selectCase      `json:"select"`
	Note      string            `json:"note"`
}

type selectCase struct {
	Language string `json:"language"`
	Hostname string `json:"hostname"`
	Bucket   int    `json:"bucket"`
	Choice   int    `json:"choice"`
}

// peerClients maps the clients' names in the vectors to ours.
var peerClients = []struct {
	name string
	c    client
}{{"grpc-go", clientGo}, {"c-core", clientCore}, {"grpc-java", clientJava}, {"grpc-js", clientJS}}

func loadPeerFiles(t testing.TB) map[string]*peerFile {
	paths, err := filepath.Glob("../testdata/peers/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors in testdata/peers: %v", err)
	}
	out := map[string]*peerFile{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var f peerFile
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = &f
	}
	return out
}

// text is the input as lint reads it.
func (v *peerVector) text() string {
	if v.Kind == "lb-config" {
		return `{"loadBalancingConfig":[{"` + v.Policy + `":` + v.Input + `}]}`
	}
	return v.Input
}

// check compares what lint and select do with the vector to what it
// records, and returns the disagreements.
func (v *peerVector) check() []string {
	var bad []string
	// As the spec reads it: no client declared.
	_, ds := Lint([]byte(v.text()), LintOptions{Clients: clientsDeclared, AllowMisspelledFields: true, AsServed: true})
	valid := !ds.HasErrors()
	if v.Ambiguous == "" && valid != (v.Verdict == "valid") {
		bad = append(bad, fmt.Sprintf("lint says valid=%v, the vector %s", valid, v.Verdict))
	}
	codes := map[string]bool{}
	for _, d := range ds {
		codes[d.Code] = true
	}
	for _, w := range v.Warn {
		if !codes[w] {
			bad = append(bad, "no "+w+" diagnostic")
		}
	}
	if valid && v.Verdict == "valid" {
		// A warning names each client that refuses a valid config, and no
		// warning says a client refuses what it accepts.
		for _, p := range peerClients {
			var named bool
			for _, d := range ds {
				if d.refusedBy&p.c != 0 {
					named = true
				}
			}
			switch {
			case v.Peers[p.name] == "reject" && !named:
				bad = append(bad, "no warning says "+p.name+" refuses it")
			case v.Peers[p.name] == "accept" && named:
				bad = append(bad, "a warning says "+p.name+" refuses it, which it accepts")
			}
		}
	}
	if v.Ambiguous == "" {
		bad = append(bad, v.checkDeclared()...)
	}
	if len(v.Select) > 0 {
		ch, ds := choicesFromText([]byte(v.text()))
		if ch == nil {
			bad = append(bad, fmt.Sprintf("select: %v", ds))
		} else {
			for _, s := range v.Select {
				if got := ch.Select(Client{Language: s.Language, Hostname: s.Hostname, Bucket: s.Bucket}); got != s.Choice {
					bad = append(bad, fmt.Sprintf("select %+v chose %d", s, got))
				}
			}
		}
	}
	return bad
}

// declaredLists are the lists of clients a user may declare, as the
// corpus tests try them.
var declaredLists = []Clients{ClientGo, ClientCCore, ClientJava, ClientNode, ClientOurs, AllClients}

// checkDeclared compares lint's verdict for each list of declared clients
// with what the vector records: valid exactly when the spec accepts the
// record and every declared client does, or when a declared client that
// accepts it reads it differently from the spec (a diagnostic says which),
// or a field is misspelled.
func (v *peerVector) checkDeclared() []string {
	var bad []string
	for _, list := range declaredLists {
		// As served: the vectors are records as clients get them.
		_, ds := Lint([]byte(v.text()), LintOptions{Clients: list, AsServed: true})
		valid := !ds.HasErrors()
		accepted := v.Verdict == "valid"
		for _, p := range peerClients {
			if list&p.c != 0 && v.Peers[p.name] == "reject" {
				accepted = false
			}
		}
		var misread bool
		for i := range ds {
			// A field one typo from a known one is refused too: every
			// client drops it (misspelled-field, the publisher's rule).
			misread = misread || ds[i].Code == CodeMisspelledField
			for j, e := range ds[i].effects() {
				if e == effectMisreads && list&(1<<j) != 0 {
					misread = true
				}
			}
		}
		switch {
		case valid && !accepted:
			bad = append(bad, fmt.Sprintf("--clients %s: lint says valid, but the spec or a declared client rejects it", strings.Join(ClientIDs(list), ",")))
		case !valid && accepted && !misread:
			bad = append(bad, fmt.Sprintf("--clients %s: lint says invalid, but the spec and the declared clients accept it and none misreads it: %v", strings.Join(ClientIDs(list), ","), ds))
		}
	}
	return bad
}

func TestPeerVectors(t *testing.T) {
	files := loadPeerFiles(t)
	ids := map[string]bool{}
	total := 0
	for name, f := range files {
		for i := range f.Vectors {
			v := &f.Vectors[i]
			total++
			t.Run(v.ID, func(t *testing.T) {
				if ids[v.ID] {
					t.Fatalf("duplicate id")
				}
				ids[v.ID] = true
				if err := v.wellFormed(); err != "" {
					t.Fatalf("%s: %s", name, err)
				}
				for _, b := range v.check() {
					t.Errorf("%s (%s, %s): %s\n  input: %s", b, v.File, v.Test, v.note(), v.text())
				}
			})
		}
	}
	if total < 250 {
		t.Errorf("%d vectors, want at least 250", total)
	}
}

func (v *peerVector) note() string {
	if v.DecidedBy != "" {
		return "decided by " + v.DecidedBy
	}
	return "uncontested"
}

// wellFormed checks what every vector must say.
func (v *peerVector) wellFormed() string {
	if v.File == "" || v.Test == "" || v.Family == "" {
		return "a vector names its source file, test and rule family"
	}
	if v.Verdict != "valid" && v.Verdict != "invalid" {
		return "verdict is valid or invalid"
	}
	if !slices.Contains([]string{"service-config", "lb-config", "choices", "txt"}, v.Kind) || (v.Kind == "lb-config") != (v.Policy != "") {
		return "kind is service-config, lb-config (with a policy), choices or txt"
	}
	agree := true
	for _, p := range peerClients {
		e := v.Peers[p.name]
		if e != "accept" && e != "reject" {
			return "every client's expectation is accept or reject"
		}
		if (e == "accept") != (v.Verdict == "valid") {
			agree = false
		}
	}
	if len(v.Peers) != len(peerClients) {
		return "peers names exactly grpc-go, c-core, grpc-java and grpc-js"
	}
	if !agree && v.DecidedBy == "" && v.Ambiguous == "" {
		return "a contested vector says which spec text decides it (decidedBy) or why it is ambiguous"
	}
	return ""
}

// TestPeerVectorsGrpcGo runs grpc-go v1.85.0 itself on every service config
// of the suite, with every balancer a DNS client can import: the grpc-go
// column records what it does.
func TestPeerVectorsGrpcGo(t *testing.T) {
	n := 0
	for _, f := range loadPeerFiles(t) {
		for _, v := range f.Vectors {
			if v.Kind != "service-config" && v.Kind != "lb-config" {
				continue
			}
			n++
			err := grpcGoParse([]byte(v.text()))
			if got := map[bool]string{true: "accept", false: "reject"}[err == nil]; got != v.Peers["grpc-go"] {
				t.Errorf("%s: grpc-go does %s, the vector says %s (%v)\n  input: %s", v.ID, got, v.Peers["grpc-go"], err, v.text())
			}
		}
	}
	if n < 150 {
		t.Errorf("only %d service configs run through grpc-go", n)
	}
}

var updatePeerTable = flag.Bool("update-peer-table", false, "rewrite the coverage table in docs/peers.md")

// TestPeerCoverageTable keeps docs/peers.md's table (rule family × the
// client whose test suite the vector comes from) current:
// go test ./serviceconfig -run PeerCoverageTable -update-peer-table
func TestPeerCoverageTable(t *testing.T) {
	const begin, end = "<!-- peers:begin -->\n", "<!-- peers:end -->"
	files := loadPeerFiles(t)
	type cell struct{ n, agree, ambiguous int }
	table := map[string]map[string]*cell{}
	var families []string
	order := []string{"grpc-go", "c-core", "grpc-java", "grpc-js"}
	for _, peer := range order {
		f := files[peer]
		if f == nil {
			t.Fatalf("no testdata/peers/%s.json", peer)
		}
		for i := range f.Vectors {
			v := &f.Vectors[i]
			if table[v.Family] == nil {
				table[v.Family] = map[string]*cell{}
				families = append(families, v.Family)
			}
			c := table[v.Family][peer]
			if c == nil {
				c = &cell{}
				table[v.Family][peer] = c
			}
			c.n++
			switch {
			case v.Ambiguous != "":
				c.ambiguous++
			case len(v.check()) == 0:
				c.agree++
			}
		}
	}
	slices.Sort(families)
	var b strings.Builder
	b.WriteString("| rule family | grpc-go | C-core | grpc-java | grpc-js | all |\n|---|---:|---:|---:|---:|---:|\n")
	sum := map[string]*cell{}
	for _, p := range append(order, "all") {
		sum[p] = &cell{}
	}
	format := func(c *cell) string {
		if c == nil || c.n == 0 {
			return "–"
		}
		s := fmt.Sprintf("%d/%d", c.agree, c.n-c.ambiguous)
		if c.ambiguous > 0 {
			s += fmt.Sprintf(" (+%d ambiguous)", c.ambiguous)
		}
		return s
	}
	for _, fam := range families {
		row := &cell{}
		fmt.Fprintf(&b, "| %s |", fam)
		for _, p := range order {
			c := table[fam][p]
			fmt.Fprintf(&b, " %s |", format(c))
			if c != nil {
				for _, s := range []*cell{row, sum[p], sum["all"]} {
					s.n += c.n
					s.agree += c.agree
					s.ambiguous += c.ambiguous
				}
			}
		}
		fmt.Fprintf(&b, " %s |\n", format(row))
	}
	b.WriteString("| **all** |")
	for _, p := range append(order, "all") {
		fmt.Fprintf(&b, " **%s** |", format(sum[p]))
	}
	b.WriteString("\n")
	// docs/codes.md says how many vectors there are.
	readme, err := os.ReadFile("../docs/codes.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("(%d of their vectors", sum["all"].n); !bytes.Contains(readme, []byte(want)) {
		t.Errorf("docs/codes.md does not say %q: update the count of the peers' vectors", want)
	}
	syncDocSection(t, "../docs/peers.md", begin, end, b.String(), *updatePeerTable, "go test ./serviceconfig -run PeerCoverageTable -update-peer-table")
}
