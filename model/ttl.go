package model

import (
	"fmt"
	"strconv"
)

// MaxTTL is the largest TTL (RFC 2181 §8): 2^31-1 seconds.
const MaxTTL = 1<<31 - 1

// parseTTL reads a TTL or timer: whole seconds as a number ("300"), or a
// BIND-style duration of units s, m, h, d and w ("30s", "5m", "1h30m",
// "1w"). It rejects fractions: DNS times are whole seconds.
func parseTTL(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration: write seconds (300) or a duration like 5m")
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n, nil
	}
	var total uint64
	i := 0
	for i < len(s) {
		j := i
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		if j == i {
			if s[i] == '.' || (s[i] >= '0' && s[i] <= '9') {
				return 0, fmt.Errorf("%q: DNS times are whole seconds, write %q", s, "90s")
			}
			return 0, fmt.Errorf("%q is not a duration: write seconds (300) or numbers with units s, m, h, d, w (like 1h30m)", s)
		}
		if j == len(s) {
			return 0, fmt.Errorf("%q: the last number has no unit; use s, m, h, d or w", s)
		}
		n, err := strconv.ParseUint(s[i:j], 10, 64)
		if err != nil || n > MaxTTL {
			return 0, fmt.Errorf("%q is out of range: at most %d seconds (about 68 years)", s, MaxTTL)
		}
		var unit uint64
		switch s[j] {
		case 's', 'S':
			unit = 1
		case 'm', 'M':
			unit = 60
		case 'h', 'H':
			unit = 3600
		case 'd', 'D':
			unit = 86400
		case 'w', 'W':
			unit = 7 * 86400
		case '.':
			return 0, fmt.Errorf("%q: DNS times are whole seconds; write it without a fraction (90s, not 1.5m)", s)
		default:
			return 0, fmt.Errorf("%q: unknown unit %q; use s, m, h, d or w", s, s[j])
		}
		total += n * unit
		if total > MaxTTL {
			return 0, fmt.Errorf("%q is out of range: at most %d seconds (about 68 years)", s, MaxTTL)
		}
		i = j + 1
	}
	return total, nil
}
