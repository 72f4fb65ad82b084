package policy

import "fmt"

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

// ValidName reports whether s can name a role, message type, timer,
// variable, commitment or state: at most 128 bytes, a letter or
// underscore, then letters, digits, underscores and hyphens (all ASCII).
func ValidName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', b == '_':
		case i > 0 && ('0' <= b && b <= '9' || b == '-'):
		default:
			return false
		}
	}
	return true
}
