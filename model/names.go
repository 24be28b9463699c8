package model

import (
	"fmt"
	"strings"
)

// maxNameWire is the longest domain name in wire format (RFC 1035 §2.3.4).
const maxNameWire = 255

// wireLen is the length of an absolute, dot-terminated name in wire format.
func wireLen(fqdn string) int {
	if fqdn == "." {
		return 1
	}
	return len(fqdn) + 1
}

// prefixedWireLen is wireLen(prefix + fqdn) for a prefix that is not "",
// without making the name.
func prefixedWireLen(prefix, fqdn string) int { return len(prefix) + len(fqdn) + 1 }

// checkName checks an absolute lower-case name ending in '.' and returns a
// message saying what is wrong, or "". Labels are 1 to 63 bytes of letters,
// digits, '-' and '_'; escapes and wildcards are not supported because
// gRPC targets are plain host names.
func checkName(fqdn string, hostname bool) string {
	if fqdn == "." {
		return ""
	}
	if wireLen(fqdn) > maxNameWire {
		return fmt.Sprintf("the name is %d bytes long in DNS wire format; names are at most %d", wireLen(fqdn), maxNameWire)
	}
	// Label by label without a slice of them: every service's names pass
	// here.
	for rest := strings.TrimSuffix(fqdn, "."); ; {
		l, more, cut := strings.Cut(rest, ".")
		rest = more
		if l == "" {
			return "the name has an empty label (two dots in a row, or a leading dot)"
		}
		if len(l) > 63 {
			return fmt.Sprintf("label %q is %d bytes long; labels are at most 63", l, len(l))
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
			case c == '-':
				if hostname && (i == 0 || i == len(l)-1) {
					return fmt.Sprintf("label %q starts or ends with '-', which host names may not (RFC 1123)", l)
				}
			case c == '*':
				return "wildcard names are not supported: list each service by name"
			case c == '\\':
				return "escapes in names are not supported: use letters, digits, '-' and '_'"
			default:
				return fmt.Sprintf("label %q holds %q: names may hold only letters, digits, '-' and '_'", l, c)
			}
		}
		if !cut {
			return ""
		}
	}
}

// absName resolves a name written in the config against origin with zone
// file rules: "@" is the origin, a name ending in '.' is absolute, any other
// name is relative to the origin. The result is lower-case.
func absName(name, origin string) string {
	name = strings.ToLower(name)
	switch {
	case name == "@":
		return origin
	case strings.HasSuffix(name, "."):
		return name
	case origin == ".":
		return name + "."
	}
	return name + "." + origin
}

// ancestors returns the names that hold fqdn (absolute, dot-terminated),
// nearest first, down to the root: "b.c.", "c.", "." for "a.b.c.".
func ancestors(fqdn string) []string {
	var out []string
	for fqdn != "." {
		i := strings.IndexByte(fqdn, '.')
		if i < 0 || i == len(fqdn)-1 {
			fqdn = "."
		} else {
			fqdn = fqdn[i+1:]
		}
		out = append(out, fqdn)
	}
	return out
}

// inZone reports whether fqdn is origin or below it.
func inZone(fqdn, origin string) bool {
	return origin == "." || fqdn == origin || strings.HasSuffix(fqdn, "."+origin)
}

// relative writes fqdn relative to origin as a zone file would ("@" for
// the origin), or absolute when it lies outside.
func relative(fqdn, origin string) string {
	switch {
	case fqdn == origin:
		return "@"
	case origin == ".":
		return strings.TrimSuffix(fqdn, ".")
	case strings.HasSuffix(fqdn, "."+origin):
		return strings.TrimSuffix(fqdn, "."+origin)
	}
	return fqdn
}

// repeatsOrigin reports whether a relative name written without the final
// dot ends with the origin, the classic zone-file slip
// ("echo.example.test" in example.test. means echo.example.test.example.test.).
func repeatsOrigin(written, origin string) bool {
	w := strings.ToLower(written)
	if origin == "." || strings.HasSuffix(w, ".") || w == "@" {
		return false
	}
	o := strings.TrimSuffix(origin, ".")
	cut := len(w) - len(o) // without making "."+o for every service
	return w == o || cut > 0 && w[cut-1] == '.' && w[cut:] == o
}

// zoneNesting finds zones that lie inside one another as their origins
// are added one at a time, by walking each origin's labels rather than
// comparing every pair of zones (a config may hold thousands). A whole
// config and a store (NestedZone) find nesting with it, so that both
// refuse the same zones with the same words.
type zoneNesting struct {
	zones map[string]bool
	below map[string]string // a proper ancestor of zones → the first of them added
}

// add adds zone origin and returns the nearest zone added before that
// holds it, and the first one added before that it holds ("" for none).
func (n *zoneNesting) add(origin string) (outer, inner string) {
	if n.zones == nil {
		n.zones, n.below = map[string]bool{}, map[string]string{}
	}
	up := ancestors(origin)
	for _, a := range up {
		if n.zones[a] {
			outer = a
			break
		}
	}
	inner = n.below[origin]
	n.zones[origin] = true
	for _, a := range up {
		if _, ok := n.below[a]; !ok {
			n.below[a] = origin
		}
	}
	return outer, inner
}

// nestedMessage is the message of zone-nested: zone inner lies inside
// zone outer; where says where the other zone of the two is defined.
func nestedMessage(inner, outer, where string) string {
	return fmt.Sprintf("zone %s lies inside zone %s%s: the publisher does not delegate; serve its names as services of %s", inner, outer, where, outer)
}
