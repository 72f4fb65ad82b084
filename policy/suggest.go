package policy

import (
	"fmt"
	"regexp"
)

// Suggest returns the candidate nearest to name by edit distance (a swap
// of neighbouring letters counting as one edit) when it is near enough to
// be a likely typo, or "". Tools use it for "did you mean" messages.
func Suggest(name string, candidates []string) string {
	best, bestDist := "", 0
	limit := max(1, len(name)/3)
	for _, c := range candidates {
		if c == name || len(c) > len(name)+limit || len(c) < len(name)-limit {
			continue
		}
		d := editDistance(name, c)
		if best == "" || d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	if best == "" || bestDist > limit {
		return ""
	}
	return best
}

// didYouMean returns `; did you mean "x"?` for the nearest candidate, or "".
func didYouMean(name string, candidates []string) string {
	if s := Suggest(name, candidates); s != "" {
		return fmt.Sprintf("; did you mean %s?", Quote(s))
	}
	return ""
}

// editDistance is the edit distance between a and b, in bytes, counting
// an insertion, a deletion, a substitution or a swap of two adjacent
// bytes as one edit (optimal string alignment), so that the common typo
// "feild" is one edit from "field".
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
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

var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// ValidName reports whether s can name a role, message type, timer,
// variable, commitment or state: a letter or underscore, then letters,
// digits, underscores and hyphens.
func ValidName(s string) bool { return len(s) <= 128 && namePattern.MatchString(s) }
