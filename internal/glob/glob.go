// Package glob matches the simple wildcards of fedrouter's configuration
// (ingress allow rules, global destination names).
package glob

// Match reports whether s matches pattern: '*' matches any run of bytes
// (none included), '?' one byte, anything else itself. Linear in
// len(pattern)×len(s) at worst: one backtrack point, the last '*'.
func Match(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
