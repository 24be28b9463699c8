package serviceconfig

import "strings"

// Suggest returns the known name closest to name, or "" when none is close
// enough to be a likely typo. Spellings that differ only in case,
// underscores or dashes (max_attempts for maxAttempts) always match. Every
// "did you mean" of this project comes from here.
func Suggest(name string, known []string) string {
	norm := normalizeName(name)
	best, bestDist := "", 1<<30
	for _, k := range known {
		if normalizeName(k) == norm {
			return k
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(k))
		if d < bestDist {
			best, bestDist = k, d
		}
	}
	// Allow one edit per four characters, at least one, at most three.
	limit := min(max(len(name)/4, 1), 3)
	if bestDist <= limit {
		return best
	}
	return ""
}

func normalizeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == '-' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 1 << 20
	}
	// Rows on the stack: Suggest runs for every unknown name of an input.
	var rows [3][65]int
	prev2, prev, cur := rows[0][:len(b)+1], rows[1][:len(b)+1], rows[2][:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
