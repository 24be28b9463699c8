package serviceconfig

import (
	"sort"
	"strconv"

	"github.com/grpc-config-dns/grpc-config-dns/internal/asciijson"
	"github.com/grpc-config-dns/grpc-config-dns/internal/jtree"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/constraints"
)

// Choice is one entry of the grpc_config list (gRFC A2): criteria that
// select clients, and the service config those clients use.
type Choice struct {
	// ClientLanguage lists languages, compared case-insensitively. Nil when
	// absent; absent or empty matches every client.
	ClientLanguage []string
	// Percentage is 0..100, or -1 when absent (matches every client).
	Percentage int
	// ClientHostname lists exact, case-sensitive hostnames. Nil when absent;
	// absent or empty matches every client.
	ClientHostname []string
	// Constraints are the choice's dynamic parameter constraints (our
	// extension, xDS TP2), or nil when it has none.
	Constraints *constraints.Expr
	// ServiceConfig is the choice's service config, as JSON text.
	ServiceConfig []byte

	node, configNode int32
	// elem is the choice's index in the JSON list, which counts elements
	// that are not choices (List leaves them out).
	elem int
}

// Choices is a parsed grpc_config value: the list of choices, first match
// wins. A Choices built by hand, with List only, works too: its methods
// read the fields, as if the list had been parsed from their JSON.
type Choices struct {
	List []Choice
	tree *jtree.Tree
	src  *source // set by choicesFromText
	// place is src.place from the start of the text, set with src. Validate
	// calls it through this field so that a program that never reads a
	// text (a gRPC client of the resolver) does not link the code that
	// places diagnostics in one (resolver's TestClientSize).
	place func(Diagnostics)
}

// Choice keys defined by gRFC A2. Anything else makes the record invalid.
const (
	keyClientLanguage = "clientLanguage"
	keyPercentage     = "percentage"
	keyClientHostname = "clientHostname"
	keyServiceConfig  = "serviceConfig"
)

var choiceKeys = []string{keyClientLanguage, keyPercentage, keyClientHostname, keyServiceConfig, keyDynamicParameterConstraints}

// ParseChoices parses a grpc_config value strictly, as gRFC A2 and our
// semantics (README, "Semantics") say: any unknown or duplicate key, a percentage that is not an integer
// from 0 to 100, or a missing serviceConfig makes the whole value invalid.
// The service configs inside are checked to be JSON objects but not
// validated; a client validates only the one it chooses ([Choices.Validate]).
// The error, if any, is an *InvalidError.
func ParseChoices(value []byte) (*Choices, error) {
	t, err := jtree.Parse(value)
	if err != nil {
		return nil, Diagnostics{syntaxDiagnostic(err)}.Err()
	}
	c := newChecker(t)
	c.errorsOnly = true
	ch := parseChoices(c)
	if err := c.diags.Err(); err != nil {
		return nil, err
	}
	return ch, nil
}

// syntaxDiagnostic turns a jtree error into a diagnostic.
func syntaxDiagnostic(err error) Diagnostic {
	je := err.(*jtree.Error)
	code, ok := codeByID()[je.Code]
	if !ok {
		code = codeJSONSyntax // the parser's codes are all registered (TestParserCodesRegistered)
	}
	return Diagnostic{Severity: code.severity(), Code: code.String(), Message: je.Msg, Offset: je.Offset}
}

// parseChoices checks the structure of the choice list rooted at node 0 and
// returns what it could read. Problems go to c.
func parseChoices(c *checker) *Choices {
	t := c.t
	ch := &Choices{tree: t}
	root := int32(0)
	if t.Nodes[root].Kind != jtree.Array {
		c.report(root, codeChoicesType, "the grpc_config value must be a JSON list of choices like [{\"serviceConfig\":{...}}], not %s", describeKind(t, root))
		return ch
	}
	if t.Nodes[root].Len == 0 {
		c.report(root, codeChoicesEmpty, "the list of choices is empty: gRFC A2 requires at least one; add [{\"serviceConfig\":{}}] for no config")
		return ch
	}
	ch.List = make([]Choice, 0, t.Nodes[root].Len)
	c.elements(root, func(i int, e int32) {
		if t.Nodes[e].Kind != jtree.Object {
			c.report(e, codeChoiceType, "choice %d must be an object with a serviceConfig, not %s", i, describeKind(t, e))
			return
		}
		x := parseChoice(c, e)
		x.elem = i
		ch.List = append(ch.List, x)
	})
	return ch
}

func parseChoice(c *checker, obj int32) Choice {
	t := c.t
	ch := Choice{Percentage: -1, node: obj, configNode: -1}
	c.members(obj, func(k, v int32) {
		if t.Nodes[v].Kind == jtree.Null && (t.Is(k, keyClientLanguage) || t.Is(k, keyClientHostname) || t.Is(k, keyPercentage)) {
			nullCriterion(c, k, v)
			return
		}
		switch {
		case t.Is(k, keyClientLanguage):
			ch.ClientLanguage = stringList(c, v, codeChoiceClientLanguage, keyClientLanguage)
		case t.Is(k, keyClientHostname):
			ch.ClientHostname = stringList(c, v, codeChoiceClientHostname, keyClientHostname)
		case t.Is(k, keyPercentage):
			ch.Percentage = percentage(c, v)
		case t.Is(k, keyDynamicParameterConstraints):
			ch.Constraints = parseConstraints(c, v, 1)
		case t.Is(k, keyServiceConfig):
			if t.Nodes[v].Kind != jtree.Object {
				c.report(v, codeChoiceServiceConfig, "serviceConfig must be an object, not %s; the whole record is invalid", describeKind(t, v))
				return
			}
			ch.configNode = v
			ch.ServiceConfig = t.Raw(v)
		default:
			if c.full(codeChoiceUnknownKey) {
				c.report(k, codeChoiceUnknownKey, "") // counted only
				return
			}
			name := quoteExcerpt(t.Str(k))
			msg := "unknown key %s in a choice: gRFC A2 makes the whole record invalid"
			if s := Suggest(t.Str(k), choiceKeys); s != "" {
				c.report(k, codeChoiceUnknownKey, msg+"; did you mean %q?", name, s)
			} else {
				c.report(k, codeChoiceUnknownKey, msg+"; choices may only hold clientLanguage, percentage, clientHostname, serviceConfig and dynamicParameterConstraints", name)
			}
		}
	})
	if ch.configNode < 0 && !hasKey(t, obj, keyServiceConfig) {
		c.report(obj, codeChoiceServiceConfig, "choice has no serviceConfig: gRFC A2 requires one; add \"serviceConfig\":{} for the default config")
	}
	return ch
}

func hasKey(t *jtree.Tree, obj int32, key string) bool { return t.Get(obj, key) >= 0 }

// nullCriterion reports a criterion whose value is null, which is the
// criterion absent: gRFC A2, "If a field is absent or empty, it matches
// all clients", and JSON's null is the value of none. C-core agrees (its
// JSON object loader skips null members, service_config_helper.cc) and
// so does grpc-go (encoding/json leaves the criterion's pointer nil,
// dns_resolver.go: canaryingSC); grpc-java (JsonUtil.getList and
// getNumberAsDouble throw on it) and grpc-js (Array.isArray and typeof
// checks) reject the whole record when they come to the choice. OmitNulls
// drops the member.
func nullCriterion(c *checker, k, v int32) {
	c.nullMembers = append(c.nullMembers, k)
	c.refuse(v, codeNullValue, clientJava|clientJS, "%s is null, which gRFC A2 reads as absent (\"If a field is absent or empty, it matches all clients\"; grpc-go and C-core agree), but grpc-java and grpc-js reject the whole record when they come to this choice; remove the member", c.t.Raw(k))
}

func stringList(c *checker, v int32, code diagCode, name string) []string {
	t := c.t
	if t.Nodes[v].Kind != jtree.Array {
		hint := ""
		if t.Nodes[v].Kind == jtree.String && t.Nodes[v].End-t.Nodes[v].Start <= maxExcerpt {
			hint = "; write [" + string(t.Raw(v)) + "]"
		}
		c.report(v, code, "%s must be a list of strings, not %s%s", name, describeKind(t, v), hint)
		return nil
	}
	out := make([]string, 0, t.Nodes[v].Len)
	c.elements(v, func(_ int, e int32) {
		if t.Nodes[e].Kind != jtree.String {
			c.report(e, code, "%s must hold only strings, not %s", name, describeKind(t, e))
			return
		}
		out = append(out, t.Str(e))
	})
	return out
}

// percentage enforces A2's `^0|[0-9]|[1-9][0-9]|100$`: a plain non-negative
// integer up to 100, written without sign, fraction or exponent.
func percentage(c *checker, v int32) int {
	t := c.t
	if t.Nodes[v].Kind != jtree.Number {
		hint := ""
		if t.Nodes[v].Kind == jtree.String {
			hint = "; drop the quotes"
		}
		c.report(v, codeChoicePercentage, "percentage must be an integer from 0 to 100, not %s%s", describeKind(t, v), hint)
		return -1
	}
	raw := t.Raw(v)
	n, ok := t.Int(v)
	if !ok || raw[0] == '-' || n > 100 {
		c.report(v, codeChoicePercentage, "percentage must be an integer from 0 to 100 written without sign, fraction or exponent, not %s", raw)
		return -1
	}
	return int(n)
}

// Validate validates the service config of choice i and returns its
// diagnostics, with paths relative to the choice list (/i/serviceConfig/…).
// Clients call it for the chosen choice only (gRFC A21). For choices read
// by choicesFromText, the diagnostics are placed in that text instead
// (Line and Column, and for a bare service config, paths relative to it).
func (ch *Choices) Validate(i int) Diagnostics {
	if ch.tree == nil {
		p, err := ch.parsed()
		if err != nil {
			return err.(*InvalidError).Diagnostics
		}
		return p.Validate(i)
	}
	c := newChecker(ch.tree)
	cfg := ch.List[i].configNode
	if cfg < 0 {
		return nil
	}
	c.pushIdx(ch.List[i].elem)
	c.pushKey(keyNodeOf(ch.tree, ch.List[i].node, cfg))
	validateServiceConfig(c, cfg)
	if ch.place != nil {
		ch.place(c.diags)
	}
	c.diags.Sort()
	return c.diags.Capped()
}

// keyNodeOf returns the key node whose value is v in object obj.
func keyNodeOf(t *jtree.Tree, obj, v int32) int32 {
	for k := t.Nodes[obj].First; k >= 0; k = t.Nodes[t.Nodes[k].Next].Next {
		if t.Nodes[k].Next == v {
			return k
		}
	}
	return -1
}

// Compact returns the choice list as compact JSON, the form to publish.
// Dynamic parameter constraints are written in canonical camelCase.
func (ch *Choices) Compact() []byte {
	if ch.tree == nil {
		if p, err := ch.parsed(); err == nil {
			return p.Compact()
		}
		return ch.appendFields(nil) // as given, for Validate to explain
	}
	return ch.compactEdited(nil, nil)
}

// compactEdited is Compact with appendEdited's edits of the members and
// values of the tree (dynamic parameter constraints are written anew, not
// edited); with none, Compact.
func (ch *Choices) compactEdited(drop, replace map[int32]string) []byte {
	t := ch.tree
	dst := make([]byte, 0, len(t.Src)+8*len(replace))
	dst = append(dst, '[')
	for i := range ch.List {
		if i > 0 {
			dst = append(dst, ',')
		}
		obj := ch.List[i].node
		dst = append(dst, '{')
		first := true
		for k := t.Nodes[obj].First; k >= 0; k = t.Nodes[t.Nodes[k].Next].Next {
			if _, skip := drop[k]; skip {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, t.Raw(k)...)
			dst = append(dst, ':')
			switch {
			case t.Is(k, keyDynamicParameterConstraints) && ch.List[i].Constraints != nil:
				dst = ch.List[i].Constraints.AppendJSON(dst)
			case len(drop) == 0 && len(replace) == 0:
				dst = t.AppendCompact(dst, t.Nodes[k].Next)
			default:
				dst = appendEdited(t, dst, t.Nodes[k].Next, drop, replace)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// CompactConfig returns choice i's service config as compact JSON.
func (ch *Choices) CompactConfig(i int) []byte {
	if ch.tree == nil {
		if p, err := ch.parsed(); err == nil {
			return p.CompactConfig(i)
		}
		return ch.List[i].config()
	}
	if n := ch.List[i].configNode; n >= 0 {
		// Sized once: the compact form is never longer than the text.
		nd := &ch.tree.Nodes[n]
		return ch.tree.AppendCompact(make([]byte, 0, nd.End-nd.Start), n)
	}
	return []byte("{}")
}

// GrpcGoConfig returns choice i's service config as compact JSON in the
// form that makes grpc-go's parser read what the spec says: status code
// names upper-cased (gRFC A6 lets them be written in any case, grpc-go
// rejects the whole config otherwise), numbers written as strings unquoted
// (proto3 JSON allows them, encoding/json does not), a loadBalancingPolicy
// in capitals lower-cased (grpc-go would fall back to pick_first), an empty
// loadBalancingConfig left out (proto3 reads it as unset, grpc-go rejects
// it), and members whose name differs from a known field only in case left
// out (the spec ignores them as unknown, grpc-go's case-insensitive JSON
// would read them as the field).
func (ch *Choices) GrpcGoConfig(i int) []byte {
	if ch.tree == nil {
		if p, err := ch.parsed(); err == nil {
			return p.GrpcGoConfig(i)
		}
		return ch.List[i].config()
	}
	n := ch.List[i].configNode
	if n < 0 {
		return []byte("{}")
	}
	// The choice list's own tree: no second parse of the config. Only
	// what grpc-go misreads is wanted, not the warnings.
	c := newChecker(ch.tree)
	c.errorsOnly = true
	validateServiceConfig(c, n)
	if len(c.caseCodes) == 0 && len(c.caseFields) == 0 && len(c.goText) == 0 && len(c.goDrop) == 0 {
		return ch.CompactConfig(i)
	}
	drop := map[int32]string{}
	for _, f := range c.caseFields {
		drop[f.node] = ""
	}
	for _, k := range c.goDrop {
		drop[k] = ""
	}
	replace := make(map[int32]string, len(c.caseCodes)+len(c.goText))
	for _, r := range c.caseCodes {
		replace[r.node] = strconv.Quote(r.canon)
	}
	for _, r := range c.goText {
		replace[r.node] = r.canon
	}
	return appendEdited(ch.tree, nil, n, drop, replace)
}

// parsed returns a Choices built by hand, without a parse tree, parsed
// from the JSON of its fields; the error says what makes that JSON
// invalid.
func (ch *Choices) parsed() (*Choices, error) {
	return ParseChoices(ch.appendFields(nil))
}

// appendFields writes the choice list from its fields, leaving out those
// that are absent (a nil list, a negative percentage, no constraints).
func (ch *Choices) appendFields(dst []byte) []byte {
	dst = append(dst, '[')
	for i := range ch.List {
		x := &ch.List[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		list := func(key string, l []string) {
			if l == nil {
				return
			}
			dst = append(asciijson.AppendString(dst, key), ':', '[')
			for j, s := range l {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = asciijson.AppendString(dst, s)
			}
			dst = append(dst, ']', ',')
		}
		list(keyClientLanguage, x.ClientLanguage)
		if x.Percentage >= 0 {
			dst = strconv.AppendInt(append(asciijson.AppendString(dst, keyPercentage), ':'), int64(x.Percentage), 10)
			dst = append(dst, ',')
		}
		list(keyClientHostname, x.ClientHostname)
		if x.Constraints != nil {
			dst = x.Constraints.AppendJSON(append(asciijson.AppendString(dst, keyDynamicParameterConstraints), ':'))
			dst = append(dst, ',')
		}
		dst = append(append(asciijson.AppendString(dst, keyServiceConfig), ':'), x.config()...)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// config is the choice's service config as given, {} when it has none.
func (x *Choice) config() []byte {
	if len(x.ServiceConfig) == 0 {
		return []byte("{}")
	}
	return x.ServiceConfig
}

// appendEdited writes node i as compact JSON, leaving out the object
// members whose key is in drop, and writing the values in replace as the
// JSON text given.
func appendEdited(t *jtree.Tree, dst []byte, i int32, drop, replace map[int32]string) []byte {
	n := &t.Nodes[i]
	switch n.Kind {
	case jtree.Array:
		dst = append(dst, '[')
		for e := n.First; e >= 0; e = t.Nodes[e].Next {
			if e != n.First {
				dst = append(dst, ',')
			}
			dst = appendEdited(t, dst, e, drop, replace)
		}
		return append(dst, ']')
	case jtree.Object:
		dst = append(dst, '{')
		first := true
		for k := n.First; k >= 0; {
			v := t.Nodes[k].Next
			if _, skip := drop[k]; !skip {
				if !first {
					dst = append(dst, ',')
				}
				first = false
				dst = append(append(dst, t.Raw(k)...), ':')
				dst = appendEdited(t, dst, v, drop, replace)
			}
			k = t.Nodes[v].Next
		}
		return append(dst, '}')
	}
	if s, ok := replace[i]; ok {
		return append(dst, s...)
	}
	return append(dst, t.Raw(i)...)
}

// OmitNulls returns a choice list (JSON) without the members of its
// service configs whose value is null, nor the choice criteria that are
// null: proto3 JSON reads null as the field's default, the same as an
// absent member, and gRFC A2 a null criterion as an absent one (so do our
// resolver, grpc-go and C-core), but grpc-java and grpc-js reject the
// whole config (null-value; the interop suite's null-method case). YAML
// writes null for an empty value (`method:`), so publishers meet it
// without meaning to.
// Everything else is kept byte for byte. The value must be a valid,
// compact choice list.
func omitNulls(value []byte) ([]byte, error) {
	t, err := jtree.Parse(value)
	if err != nil {
		return nil, Diagnostics{syntaxDiagnostic(err)}.Err()
	}
	c := newChecker(t)
	c.errorsOnly = true
	validateChoiceConfigs(c, parseChoices(c))
	if err := c.diags.Err(); err != nil {
		return nil, err
	}
	if len(c.nullMembers) == 0 {
		return value, nil
	}
	drop := make(map[int32]string, len(c.nullMembers))
	for _, k := range c.nullMembers {
		drop[k] = ""
	}
	return appendEdited(t, make([]byte, 0, len(value)), 0, drop, nil), nil
}

// NineDigitDurations returns a choice list (JSON) with every duration of
// its service configs written with exactly 9 fraction digits when it has
// any ("0.1s" becomes "0.100000000s"): the form grpc-js, which takes the
// fraction digits as nanoseconds, reads correctly, and every other client
// reads alike. Everything else is kept byte for byte. The value must be a
// valid choice list.
func nineDigitDurations(value []byte) ([]byte, error) {
	t, err := jtree.Parse(value)
	if err != nil {
		return nil, Diagnostics{syntaxDiagnostic(err)}.Err()
	}
	c := newChecker(t)
	c.errorsOnly = true
	validateChoiceConfigs(c, parseChoices(c))
	if err := c.diags.Err(); err != nil {
		return nil, err
	}
	if len(c.shortFractions) == 0 {
		return value, nil
	}
	// sort.Slice, not slices.SortFunc: a gRPC client links it already, and
	// the generic sort for int32 (here and in jtree) cost it 13 kB
	// (resolver's TestClientSize). Starts differ, so the order is the same.
	sf := c.shortFractions
	sort.Slice(sf, func(i, j int) bool { return t.Nodes[sf[i]].Start < t.Nodes[sf[j]].Start })
	out := make([]byte, 0, len(value)+8*len(c.shortFractions))
	last := 0
	for _, n := range c.shortFractions {
		out = append(out, value[last:t.Nodes[n].Start]...)
		out = append(out, nineDigits(t, n)...)
		last = int(t.Nodes[n].End)
	}
	return append(out, value[last:]...), nil
}

// nineDigits is duration string n written with nine fraction digits, as
// JSON.
func nineDigits(t *jtree.Tree, n int32) string {
	d, _ := parseDuration(t.Str(n))
	// A duration is ASCII without quotes or backslashes: quoted as is.
	var b [40]byte
	return string(append(appendDuration(append(b[:0], '"'), d), '"'))
}
