package router

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/console"
	"github.com/fedrouter/fedrouter/internal/ratelog"
)

// guard is the admin API's gate: every request passes it before the mux.
// Its checks go cheapest and least secret first:
//
//  1. Host: an IP address, localhost, the listen host or one of
//     AdminOptions.Names, else 403. A page at evil.example whose name is
//     made to resolve to 127.0.0.1 (DNS rebinding) sends Host: evil.example.
//  2. Origin and Sec-Fetch-Site: a browser's request from another site is
//     refused with 403 (cross-site request forgery). The console's static
//     files (console.Open: GET or HEAD, no data in them) pass from here.
//  3. A write (any method but GET and HEAD) must be Content-Type:
//     application/json, else 415: a page can POST text/plain without asking
//     the server first, never application/json.
//  4. /healthz and the console's files pass from here: the one only says
//     the process serves, the others hold no data.
//  5. A client with too many wrong tokens lately gets 429 and Retry-After,
//     its token not even compared (throttle).
//  6. The bearer token, compared in constant time: missing or wrong, 401;
//     a wrong one is a strike for the client.
//
// screen (1-3) is pure; admit adds the throttle, whose state is its own.
type guard struct {
	names    map[string]bool          // accepted Host names, lower case, no trailing dot
	tokenSum atomic.Pointer[[32]byte] // SHA-256 of the token: compared sums hide its length; a reload replaces it
	throttle *throttle
	logs     *ratelog.Limiter // the wrong-token warnings' rate
	log      zerolog.Logger
	now      func() time.Time // time.Now; tests move it
}

// refusal is why the gate turned a request away.
type refusal struct {
	status     int
	msg        string
	retryAfter time.Duration // 429 only
}

func newGuard(token, listen string, names []string, log zerolog.Logger) *guard {
	g := &guard{names: map[string]bool{"localhost": true},
		throttle: newThrottle(), logs: ratelog.New(wrongTokenLogEvery), log: log, now: time.Now}
	g.setToken(token)
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		g.names[canonicalHost(h)] = true // an IP address passes anyway
	}
	for _, n := range names {
		g.names[canonicalHost(n)] = true
	}
	return g
}

// wrap puts the gate in front of next.
func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer is live state (or a refusal): never stored by a
		// browser or a proxy. The console's files say otherwise for theirs.
		w.Header().Set("Cache-Control", "no-store")
		if ref := g.admit(r, g.now()); ref != nil {
			if ref.retryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ref.retryAfter.Seconds()))))
			}
			writeError(w, ref.status, ref.msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wrapLocal is the gate of the Unix socket: the browser checks (a page
// cannot reach a socket, but they cost nothing), and no token nor throttle:
// the socket's directory and peer check admitted the client already.
func (g *guard) wrapLocal(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ref := g.screen(r); ref != nil {
			writeError(w, ref.status, ref.msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// setToken makes token the one the gate lets in, from the next request
// on (a reload's new token: the old one is refused from then).
func (g *guard) setToken(token string) {
	sum := sha256.Sum256([]byte(token))
	g.tokenSum.Store(&sum)
}

// admit runs every check; nil lets the request through.
func (g *guard) admit(r *http.Request, now time.Time) *refusal {
	if ref := g.screen(r); ref != nil {
		return ref
	}
	if r.URL.Path == "/healthz" || console.Open(r) {
		return nil
	}
	client := clientKey(r.RemoteAddr)
	if wait, global := g.throttle.wait(client, now); wait > 0 {
		from := client
		if global {
			from = "all clients together (the local CLI is not throttled: it uses the Unix socket)"
		}
		return &refusal{status: http.StatusTooManyRequests, retryAfter: wait,
			msg: fmt.Sprintf("too many wrong admin tokens from %s: try again in %s", from, wait.Round(time.Second))}
	}
	got, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return &refusal{status: http.StatusUnauthorized,
			msg: `missing admin token: send the header "Authorization: Bearer TOKEN" (the router's admin token: docs/admin-api.md)`}
	}
	sum := sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(sum[:], g.tokenSum.Load()[:]) == 1 {
		return nil
	}
	blocked := g.throttle.fail(client, now)
	g.warnWrongToken(r, client, blocked, now)
	return &refusal{status: http.StatusUnauthorized,
		msg: `wrong admin token (want the router's admin token as "Authorization: Bearer TOKEN")`}
}

// warnWrongToken logs a wrong token and a block it started through the
// rate-limited logger: the first of each at once, then a count every
// logEvery, so a flood of guesses is a few lines, not a line a guess.
func (g *guard) warnWrongToken(r *http.Request, client string, blocked time.Duration, now time.Time) {
	if g.logs.Allow("wrong token", now) {
		g.log.Warn().Str("remote", r.RemoteAddr).Str("path", r.URL.Path).Msg("admin API: wrong token")
	}
	if blocked > 0 && g.logs.Allow("client turned away", now) {
		g.log.Warn().Str("client", client).Dur("for", blocked).Int("wrong_tokens", g.throttle.max).
			Msg("admin API: client turned away after too many wrong tokens")
	}
	for _, s := range g.logs.Due(now) {
		g.log.Warn().Str("what", s.Key).Uint64("count", s.Count).Dur("over", s.Over).
			Msg("admin API: wrong tokens (repeats not logged one by one)")
	}
}

// screen checks what a browser's request gives away: the Host it was sent
// to, the site it comes from and, for a write, its Content-Type.
func (g *guard) screen(r *http.Request) *refusal {
	if !g.hostAllowed(r.Host) {
		return &refusal{status: http.StatusForbidden,
			msg: fmt.Sprintf("Host %q is not a name of this router: use its address, or add the name to admin.names", clip(r.Host))}
	}
	if console.Open(r) {
		// The console's files hold no data: any site may link to the page
		// (Sec-Fetch-Site: cross-site on the navigation). Its fetches of
		// the API are checked below as any other request.
		return nil
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return &refusal{status: http.StatusForbidden,
				msg: fmt.Sprintf("cross-origin request refused (Origin %q): the admin API is not for web pages", clip(o))}
		}
	}
	switch s := r.Header.Get("Sec-Fetch-Site"); s {
	case "cross-site", "same-site":
		return &refusal{status: http.StatusForbidden,
			msg: fmt.Sprintf("cross-site request refused (Sec-Fetch-Site: %s): the admin API is not for web pages", s)}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &refusal{status: http.StatusUnsupportedMediaType,
				msg: fmt.Sprintf("%s needs Content-Type: application/json (got %q)", r.Method, clip(ct))}
		}
	}
	return nil
}

// hostAllowed: an IP address (DNS rebinding needs a name), or a name of
// the router's.
func (g *guard) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return g.names[canonicalHost(host)]
}

// bearer takes the token out of an Authorization header; the scheme's
// name is case-insensitive (RFC 9110).
func bearer(h string) (string, bool) {
	const scheme = "Bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return h[len(scheme):], true
}

func canonicalHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

// clientKey is who the throttle counts: the remote IP address, an IPv6
// one by its /64 (what one host is usually given). Proxies' forwarding
// headers are not believed: anyone can write them.
func clientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64) // a /64 of an IPv6 address cannot fail
		return p.String()
	}
	return ip.String()
}

// clip bounds what a refusal repeats of the request.
func clip(s string) string {
	const n = 100
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
