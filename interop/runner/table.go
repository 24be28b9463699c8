package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
)

const (
	beginMarker = "<!-- compat:begin -->"
	endMarker   = "<!-- compat:end -->"
)

// table is the compatibility table of this run, in Markdown: one row per
// record, one column per client, each cell the outcome the suite measured,
// marked by whether it is what gRFC A2 and A21 prescribe.
func (s *suite) table() string {
	var b strings.Builder
	head := map[string]string{
		grpcGo:   "grpc-go " + s.versions[grpcGo] + " `dns:///`",
		ours:     "ours, `dnsconfig:///`",
		grpcJS:   "grpc-js " + s.versions[grpcJS] + " ¹",
		grpcPy:   "Python grpcio " + s.versions[grpcPy] + " (C-core)",
		grpcJava: "grpc-java " + s.versions[grpcJava] + " ⁴",
	}
	b.WriteString("| published record | lint |")
	for _, c := range clients {
		b.WriteString(" " + head[c] + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(clients)) + "\n")
	for _, c := range cases {
		title := c.Title
		if isFix(c) {
			title = "↳ as lint advises: " + title
		}
		if c.Foreign != nil {
			title += " ²"
		}
		lint := "clean"
		if len(c.Lint) > 0 {
			lint = "`" + strings.Join(c.Lint, "`, `") + "`"
		}
		if c.Choices == "" && c.Foreign == nil {
			lint = "—"
		}
		fmt.Fprintf(&b, "| %s | %s |", title, lint)
		for _, client := range clients {
			fmt.Fprintf(&b, " %s |", cell(c, client, classify(client, s.results[client][c.Host])))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| %s | clean |", change.Title)
	for _, client := range clients {
		cell := s.changeDelay[client]
		fmt.Fprintf(&b, " %s %s |", mark(strings.HasPrefix(cell, "applied")), cell)
	}
	b.WriteString("\n\n")
	b.WriteString("*applied*: the methodConfig timeout fired, the retry policy made a flaky call succeed, and calls spread over both backends (round_robin); ")
	b.WriteString("*applied without* an effect: the others were seen, and that one plainly not (*timeout*: the slow call ran its 5 s; *retry*: the flaky call failed; *round_robin*: calls stayed on one backend); ")
	b.WriteString("*no config*: none of that, the channel's default; *fails*: calls fail at once because the channel rejected the record, with UNAVAILABLE (grpc-java: UNKNOWN); ")
	b.WriteString("*times out*: every call fails at once with DEADLINE_EXCEEDED. ")
	b.WriteString("✅ is what gRFC A2 and A21 prescribe for a client without a default service config, ❌ differs. ")
	b.WriteString("¹ grpc-js asks TXT at the bare host name and only asks the target's DNS server with `GRPC_NODE_USE_ALTERNATIVE_RESOLVER=true`; the suite publishes at both names (`compat: {bareHost: true}`) except where the row says otherwise. ")
	b.WriteString("² served by a stand-in DNS server: our publisher refuses to publish these records. ")
	b.WriteString("³ grpc-js fails the channel on a record it rejects when the TXT answer is handled before the addresses, and keeps its default config when it comes after: a race. ")
	b.WriteString("⁴ grpc-java reads TXT records only with the system property `io.grpc.internal.DnsNameResolverProvider.enable_service_config=true`, and ignores the authority of `dns://NS/host`: it asks the nameservers of `/etc/resolv.conf`, so the suite runs its JVM with a resolv.conf of its own, and gives it the addresses in a hosts file. ")
	b.WriteString("⁵ grpc-js compares a percentage with a number it draws per channel in [0, 100), so `0.9` matches about one channel in 110. ")
	b.WriteString("Python grpcio reads TXT records only with the channel argument `grpc.service_config_disable_resolution` set to 0.\n")
	return b.String()
}

// cell is a client's outcome on a case, marked by whether it is what the
// specs prescribe. An outcome that timing (³) or a random draw (⁵) decides
// between alternatives is written as all of them, so that the table does
// not change from run to run.
func cell(c *testCase, client, got string) string {
	want := c.want(client)
	if len(want) > 1 && slices.Contains(want, got) {
		ok := true
		for _, w := range want {
			ok = ok && w == c.intent(client)
		}
		note := " ³"
		if c.Want[client] == jsDraw {
			note = " ⁵"
		}
		return mark(ok) + " " + strings.Join(want, " or ") + note
	}
	return mark(got == c.intent(client)) + " " + got
}

func isFix(c *testCase) bool {
	for _, x := range cases {
		if x.Fix == c.Host {
			return true
		}
	}
	return false
}

func mark(ok bool) string {
	if ok {
		return "✅"
	}
	return "❌"
}

// replaceTable puts table between the markers of readme.
func replaceTable(readme []byte, table string) ([]byte, error) {
	i := bytes.Index(readme, []byte(beginMarker))
	j := bytes.Index(readme, []byte(endMarker))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %s … %s markers", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(readme[:i+len(beginMarker)])
	out.WriteString("\n" + table)
	out.Write(readme[j:])
	return out.Bytes(), nil
}

func writeTable(path, table string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := replaceTable(old, table)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return os.WriteFile(path, updated, 0o644)
}

func (s *suite) checkReadme(path, table string) {
	old, err := os.ReadFile(path)
	if err != nil {
		s.check(false, "README table: %v", err)
		return
	}
	updated, err := replaceTable(old, table)
	s.check(err == nil && bytes.Equal(old, updated), "README table: %s holds the table this run measured (if not, run interop/run.sh -readme %s and commit it)", path, path)
}
