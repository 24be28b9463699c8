package config

import "strings"

// suggest returns the known key closest to name, or "" when none is close
// enough to be a likely typo. Keys that differ only in case, '_' or '-'
// (service_config for serviceConfig) always match.
func suggest(name string, known []string) string {
	norm := normalize(name)
	best, bestDist := "", 1<<30
	for _, k := range known {
		if normalize(k) == norm {
			return k
		}
		if d := distance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist <= min(max(len(name)/4, 1), 3) {
		return best
	}
	return ""
}

func normalize(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
}

// distance is the Levenshtein distance with adjacent transpositions.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 1 << 20
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
