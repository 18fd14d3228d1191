// Package redact hides the password in a broker address. It is a leaf
// (the standard library only) so that the route vocabulary
// (routes/routespec), which a client of the admin API imports, can show
// a route naming a broker with credentials without importing amqp/.
package redact

import "strings"

// Address hides the password of a broker address for logs, errors and
// API answers — the one place secrets in addresses are removed: a URL
// ("amqp://user:xxxxx@host"), qpid-route's "user/pass@host:port" and
// "user:pass@host:port", and strings that do not parse. The user
// information is taken to end at the last '@': a password holding '/',
// '?' or an unescaped '@' is hidden too (a path holding '@' is hidden
// with it: better than a leak).
func Address(s string) string {
	rest, scheme := s, ""
	if i := strings.Index(s, "://"); i >= 0 {
		scheme, rest = s[:i+3], s[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	// A URL's password follows ':'; qpid-route's follows '/'
	// (user/pass@host): the first of either starts it.
	sep := strings.IndexAny(rest[:at], ":/")
	if sep < 0 {
		return s
	}
	return scheme + rest[:sep+1] + "xxxxx" + rest[at:]
}
