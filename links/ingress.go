package links

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/internal/glob"
)

// The ingress's rules. An application's request through a broker's
// IngressQueue names any broker and any address: left open, whoever can
// publish to one ingress could write into every queue and exchange of the
// federation, the routers' own included. So a request passes only when
// an allow rule of that ingress matches its destination broker and
// address, and never when the address is one of the routers' own — the
// decision below is pure (no I/O, no state), and the ingress's dispatch
// (EngineDispatch) refuses what it does not allow with CondUnauthorized
// and the rule.

// CondUnauthorized is the condition of a request the ingress refused, or
// of a message in transit for one of the routers' own addresses.
const CondUnauthorized = "amqp:unauthorized-access"

// RouterOwnedPrefix starts the names of every queue the routers own
// (transit, ingress, dead-letter, fan-out, subscriptions, control inboxes
// under the default control address).
const RouterOwnedPrefix = "fedrouter."

// RouterOwned says whether n is one of the routers' own nodes: a name
// under RouterOwnedPrefix, or the control node (control, the configured
// topology.control_address) and its inboxes (control + "."). No message
// in transit is ever delivered there.
func RouterOwned(n amqp.Node, control string) bool {
	if strings.HasPrefix(n.Name, RouterOwnedPrefix) {
		return true
	}
	return control != "" && (n.Name == control || strings.HasPrefix(n.Name, control+"."))
}

// IngressRule allows requests through one ingress to matching
// destinations: brokers matching ToBroker, addresses (amqp.Node.Address
// form: queue:NAME, exchange:NAME, exchange:NAME:KEY) matching Address.
// Both are globs: '*' matches any run of characters, ':' included, '?'
// one character; nothing else is special.
type IngressRule struct {
	ToBroker string
	Address  string
}

// IngressPolicy is what one broker's ingress lets through.
type IngressPolicy struct {
	Rules []IngressRule
	// Control is the control node's name (topology.control_address):
	// router-owned like every RouterOwnedPrefix name.
	Control string
}

// Refusal reasons, as counted (IngressCounters) and exported as metric
// labels.
const (
	RefusedRouterOwned = "router_owned"
	RefusedNotAllowed  = "not_allowed"
)

// IngressCounters count an ingress's refusals by reason.
type IngressCounters struct {
	RouterOwned, NotAllowed atomic.Uint64
}

func (c *IngressCounters) add(reason string) {
	if c == nil {
		return
	}
	switch reason {
	case RefusedRouterOwned:
		c.RouterOwned.Add(1)
	case RefusedNotAllowed:
		c.NotAllowed.Add(1)
	}
}

// Check says whether a request for node on broker dest may pass: "" when
// it may, else the reason (RefusedRouterOwned, RefusedNotAllowed) and a
// description naming the rule, for the dead-letter annotation.
func (p *IngressPolicy) Check(dest string, node amqp.Node) (reason, why string) {
	addr := node.Address()
	if RouterOwned(node, p.Control) {
		return RefusedRouterOwned, fmt.Sprintf("ingress: %s on %s is one of the routers' own addresses (%s*, %s): never reachable through the ingress, whatever ingress.allow says",
			addr, dest, RouterOwnedPrefix, p.Control)
	}
	for _, r := range p.Rules {
		if Glob(r.ToBroker, dest) && Glob(r.Address, addr) {
			return "", ""
		}
	}
	return RefusedNotAllowed, fmt.Sprintf("ingress: %s on %s matches no ingress.allow rule of this broker's ingress", addr, dest)
}

// Glob reports whether s matches pattern: '*' matches any run of bytes
// (none included), '?' one byte, anything else itself (internal/glob).
func Glob(pattern, s string) bool { return glob.Match(pattern, s) }
