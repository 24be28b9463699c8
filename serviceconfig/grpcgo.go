package serviceconfig

import (
	"fmt"
	"strings"
)

// grpcGoFailure says why some client using grpc-go's built-in dns resolver
// would fail its channel (UNAVAILABLE) on this choice list, or returns ""
// when none would. Choice is the index of the choice at fault, or -1 when
// the fault is that no choice matches.
//
// It models grpc-go's reading of a record, which differs from gRFC A2 and
// from ours (checked against grpc-go 1.85's internal/resolver/dns):
// clientLanguage must contain exactly "GO"; an empty clientLanguage or
// clientHostname list matches no client; unknown choice keys, our
// dynamicParameterConstraints among them, are ignored; the percentage is
// drawn anew on every resolution, so only an absent percentage or 100 takes
// every draw. When no choice matches, grpc-go parses an empty config and
// fails the channel; a chosen config it cannot parse fails it too (its
// JSON field names are read in any case, so "Timeout" counts as timeout).
func (ch *Choices) grpcGoFailure() (reason string, choice int) {
	return ch.grpcGoFailureWith(func(i int) string { return grpcGoRejects(ch.CompactConfig(i)) })
}

// grpcGoFailureWith is grpcGoFailure with grpcGoRejects of choice i's
// config told by rejects(i), which may know it without validating the
// config again.
func (ch *Choices) grpcGoFailureWith(rejects func(i int) string) (reason string, choice int) {
	var misses []string
	for i := range ch.List {
		c := &ch.List[i]
		lang := len(c.ClientLanguage) == 0 || containsExact(c.ClientLanguage, "GO")
		switch {
		case !lang:
			misses = append(misses, fmt.Sprintf(`choice %d is for clientLanguage %s, and grpc-go matches only "GO"`, i, strings.Join(c.ClientLanguage, ", ")))
			continue
		case c.ClientLanguage != nil && len(c.ClientLanguage) == 0, c.ClientHostname != nil && len(c.ClientHostname) == 0:
			misses = append(misses, fmt.Sprintf("choice %d has an empty list, which grpc-go matches with no client", i))
			continue
		case c.Percentage == 0:
			continue // percentage 0 takes no client anywhere
		}
		if msg := rejects(i); msg != "" {
			return fmt.Sprintf("choice %d is what grpc-go clients pick, and grpc-go rejects its config (%s)", i, msg), i
		}
		everyDraw := c.Percentage < 0 || c.Percentage >= 100
		if everyDraw && c.ClientHostname == nil {
			return "", -1
		}
		if !everyDraw {
			misses = append(misses, fmt.Sprintf("choice %d takes only draws up to %d%%", i, c.Percentage))
		}
		if c.ClientHostname != nil {
			misses = append(misses, fmt.Sprintf("choice %d only hosts %s", i, strings.Join(c.ClientHostname, ", ")))
		}
	}
	if len(misses) == 0 {
		return "no choice matches a grpc-go client", -1
	}
	return "no choice matches every grpc-go client: " + strings.Join(misses, "; "), -1
}

// grpcGoRejects says why grpc-go's parser would reject a service config,
// or returns "": it checks what grpc-go reads (field names in any case
// taken for the field) with our rules, and finds an error or a warning that
// names grpc-go among the clients that refuse the config.
func grpcGoRejects(cfg []byte) string {
	for _, d := range ValidateServiceConfig(grpcGoView(cfg)) {
		if d.Severity == Error || d.refusedBy&clientGo != 0 {
			return d.Message
		}
	}
	return ""
}

func containsExact(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
