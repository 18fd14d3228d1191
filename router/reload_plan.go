package router

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

// The reload's decision, a pure core: the configuration in force and the
// one just read in (each reduced to a reloadInput by the driver,
// reload.go, which does the reading), the routes running and their
// origins in; the plan out — routes to start, stop or replace, brokers
// to re-dial, settings to take on, or the refusals that keep everything
// as it is. No I/O, no clock, no locks.

// reloadInput is one configuration as a reload compares it.
type reloadInput struct {
	routes  []configRoute         // the configured routes, normalized, in file order
	brokers map[string]brokerSums // by name
	fixed   []config.Setting      // what cannot change while the router runs
	// problems the driver met reducing the file (a route naming an unknown
	// broker, a TLS file it cannot read): each refuses the reload.
	problems []string
	tokenSum string // SHA-256 of the admin token; "" when reload does not manage it
	level    string // log.level
}

// configRoute is one configured route: its id, normalized spec and
// where the file writes it.
type configRoute struct {
	id   string
	spec routes.Spec
	at   string
}

// brokerSums are a broker's settings as sums (amqp.BrokerConfig's
// DialFingerprint and ManagementFingerprint), and its new settings to
// re-dial with.
type brokerSums struct {
	dial, mgmt string
	at         string
	cfg        amqp.BrokerConfig
}

// reloadPlan is what a reload does. With refused set it does nothing.
type reloadPlan struct {
	add, remove, replace []configRoute // replace holds the new specs
	unchanged            int
	redial               []string // broker names, sorted
	token                bool     // take the new admin token
	level                string   // the new log level; "" unchanged
	oldLevel             string
	refused              []string // "file:line: why", sorted by file order
}

// changed says whether the plan does anything.
func (p reloadPlan) changed() bool {
	return len(p.add)+len(p.remove)+len(p.replace)+len(p.redial) > 0 || p.token || p.level != ""
}

// planReload compares old (in force) with next (just read). running is
// every route the router runs, by id, with its origin; clustered says
// the configured routes live in a cluster's store (they are not changed
// by a reload: refused).
func planReload(old, next reloadInput, running map[string]routes.Origin, clustered bool) reloadPlan {
	p := reloadPlan{refused: append([]string(nil), next.problems...)}
	p.refused = append(p.refused, fixedChanges(old.fixed, next.fixed)...)
	planRoutes(&p, old.routes, next.routes, running)
	if clustered && len(p.add)+len(p.remove)+len(p.replace) > 0 {
		p.refused = append(p.refused, fmt.Sprintf("%s: routes: a cluster member's configured routes live in the cluster's store and change at its next start, not by a reload", firstRouteAt(next.routes, old.routes)))
	}
	for name, nb := range next.brokers {
		ob, ok := old.brokers[name]
		if !ok {
			continue // a new broker: refused with the set of names (fixed)
		}
		if ob.mgmt != nb.mgmt {
			p.refused = append(p.refused, fmt.Sprintf("%s: brokers[%s]: the management API's settings (management.url, username, password, vhost, or the username and password it borrows from the broker's) cannot change while the router runs: restart the router to apply them, or put them back", nb.at, name))
			continue
		}
		if ob.dial != nb.dial {
			p.redial = append(p.redial, name)
		}
	}
	sort.Strings(p.redial)
	p.token = old.tokenSum != next.tokenSum
	if old.level != next.level {
		p.level, p.oldLevel = next.level, old.level
	}
	sort.SliceStable(p.refused, func(i, j int) bool { return problemLess(p.refused[i], p.refused[j]) })
	return p
}

// planRoutes sorts the configured routes into added, removed, changed
// (same identity, other settings) and unchanged; a new configured route
// with the id of a runtime route is refused.
func planRoutes(p *reloadPlan, old, next []configRoute, running map[string]routes.Origin) {
	before := make(map[string]configRoute, len(old))
	for _, r := range old {
		before[r.id] = r
	}
	seen := make(map[string]bool, len(next))
	for _, r := range next {
		seen[r.id] = true
		o, ok := before[r.id]
		switch {
		case !ok && running[r.id] != "" && running[r.id] != routes.OriginConfig:
			p.refused = append(p.refused, fmt.Sprintf("%s: route %s (id %s) runs already as a %s route: delete it first (fedrouter route del %s), then reload", r.at, r.spec, r.id, running[r.id], r.id))
		case !ok:
			p.add = append(p.add, r)
		case !sameSpec(o.spec, r.spec):
			p.replace = append(p.replace, r)
		default:
			p.unchanged++
		}
	}
	for _, r := range old {
		if !seen[r.id] {
			p.remove = append(p.remove, r)
		}
	}
}

// sameSpec: two normalized specs run alike.
func sameSpec(a, b routes.Spec) bool { return reflect.DeepEqual(a, b) }

// fixedChanges names every fixed setting whose value differs, where the
// new file writes it (or the old one did, for a setting removed). A
// broker's own settings are compared only when it is in both: a broker
// added or removed is the set of names' change.
func fixedChanges(old, next []config.Setting) []string {
	was := make(map[string]config.Setting, len(old))
	for _, s := range old {
		was[s.Key] = s
	}
	var out []string
	for _, s := range next {
		o, ok := was[s.Key]
		if !ok || o.Sum == s.Sum {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s cannot change while the router runs: restart the router to apply it, or put it back", s.At, s.Key))
	}
	return out
}

func firstRouteAt(lists ...[]configRoute) string {
	for _, l := range lists {
		if len(l) > 0 {
			return l[0].at
		}
	}
	return "routes"
}

// problemLess orders "file:line: ..." problems by line.
func problemLess(a, b string) bool {
	la, lb := problemLine(a), problemLine(b)
	if la != lb {
		return la < lb
	}
	return a < b
}

func problemLine(p string) int {
	rest := p
	if i := strings.Index(rest, ":"); i >= 0 {
		rest = rest[i+1:]
	}
	var n int
	if _, err := fmt.Sscanf(rest, "%d", &n); err != nil {
		return 0
	}
	return n
}
