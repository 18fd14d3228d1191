package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
)

// IngressSpec is the ingress: applications' requests for multi-hop
// delivery through fedrouter.ingress on this router's brokers
// (docs/multihop.md). Off unless enabled; when on, a request passes only
// if an allow entry for its broker matches its destination broker and
// address, and never to one of the routers' own addresses.
type IngressSpec struct {
	// Enabled turns the ingress on. Off (the default), the router takes
	// nothing from any broker's fedrouter.ingress.
	Enabled bool `yaml:"enabled"`
	// Allow lists what may pass; the ingress of a broker no entry names
	// is not served.
	Allow []IngressAllow `yaml:"allow"`
}

// IngressAllow is one allow entry.
type IngressAllow struct {
	// Broker is the broker whose ingress this entry is for: one of the
	// router's brokers, or "*" for all of them.
	Broker string `yaml:"broker"`
	// ToBroker is the destination broker, a glob ('*', '?').
	ToBroker string `yaml:"to_broker"`
	// Address is the destination address as requested (queue:NAME,
	// exchange:NAME, exchange:NAME:KEY), a glob ('*' matches ':' too).
	Address string `yaml:"address"`
}

// maxPatternLen bounds an allow entry's globs, in bytes.
const maxPatternLen = 1024

var brokerGlobRE = regexp.MustCompile(`^[A-Za-z0-9_.*?-]+$`)

// validateIngress checks the ingress section against the brokers.
func (c *Config) validateIngress(brokers map[string]int) []string {
	var p []string
	in := c.Ingress
	if in.Enabled && !c.Flooding() {
		p = append(p, c.at("ingress")+": ingress.enabled: the ingress rides on multi-hop transit, which needs link-state flooding: set topology.secret")
	}
	if in.Enabled && len(in.Allow) == 0 {
		p = append(p, c.at("ingress")+": ingress.allow: the ingress is enabled but allows nothing; list what may pass (e.g. {broker: rabbit1, to_broker: rabbit4, address: \"exchange:orders\"} and the same with address: \"exchange:orders:*\"; not \"exchange:orders*\", which also matches exchange:orders.secret)")
	}
	for i, a := range in.Allow {
		key := fmt.Sprintf("ingress.allow[%d]", i)
		add := func(field, format string, args ...any) {
			p = append(p, c.at(key)+": "+key+"."+field+": "+fmt.Sprintf(format, args...))
		}
		switch _, known := brokers[a.Broker]; {
		case a.Broker == "":
			add("broker", "required: one of this router's brokers, or \"*\" for all")
		case a.Broker != "*" && !known:
			add("broker", "%q is not in brokers", a.Broker)
		}
		switch {
		case a.ToBroker == "":
			add("to_broker", "required: a broker name or a glob (\"*\" for any)")
		case len(a.ToBroker) > maxPatternLen:
			add("to_broker", "%d bytes long, at most %d", len(a.ToBroker), maxPatternLen)
		case !brokerGlobRE.MatchString(a.ToBroker):
			add("to_broker", "%q: use letters, digits, '.', '_', '-' and the wildcards '*' and '?'", a.ToBroker)
		}
		if problem := checkAddressGlob(a.Address, c.Topology.ControlAddress); problem != "" {
			add("address", "%s", problem)
		}
	}
	return p
}

// checkAddressGlob judges one address pattern: "" when it is usable.
func checkAddressGlob(pat, control string) string {
	switch {
	case pat == "":
		return `required: queue:NAME, exchange:NAME or exchange:NAME:KEY, with '*' and '?' as wildcards (e.g. "exchange:orders:*")`
	case len(pat) > maxPatternLen:
		return fmt.Sprintf("%d bytes long, at most %d", len(pat), maxPatternLen)
	case pat == "*":
		return ""
	}
	kind, rest, _ := strings.Cut(pat, ":")
	if kind != "queue" && kind != "exchange" {
		return fmt.Sprintf("%q: start with queue: or exchange: (or give \"*\" for every address)", pat)
	}
	// A pattern that can only name the routers' own addresses is a
	// mistake (they are refused anyway): judged on the name's literal
	// part, up to its first wildcard.
	name, _, _ := strings.Cut(rest, ":")
	owned := links.RouterOwned(amqp.Node{Name: name}, control)
	if i := strings.IndexAny(name, "*?"); i >= 0 {
		lit := name[:i]
		owned = strings.HasPrefix(lit, links.RouterOwnedPrefix) || (control != "" && strings.HasPrefix(lit, control+"."))
	}
	if owned {
		return fmt.Sprintf("%q names the routers' own addresses (%s*, %s), which the ingress never reaches", pat, links.RouterOwnedPrefix, control)
	}
	if !strings.ContainsAny(pat, "*?") {
		if _, err := amqp.ParseAddress(pat); err != nil {
			return err.Error()
		}
	}
	return ""
}

// IngressRules returns, by broker, the allow rules of each broker whose
// ingress this router serves; nil when the ingress is off.
func (c *Config) IngressRules() map[string][]links.IngressRule {
	if !c.Ingress.Enabled {
		return nil
	}
	out := map[string][]links.IngressRule{}
	for _, a := range c.Ingress.Allow {
		r := links.IngressRule{ToBroker: a.ToBroker, Address: a.Address}
		for _, b := range c.Brokers {
			if a.Broker == "*" || a.Broker == b.Name {
				out[b.Name] = append(out[b.Name], r)
			}
		}
	}
	return out
}
