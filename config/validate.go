package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (c *Config) validate() []string {
	var p []string
	add := func(key, format string, args ...any) {
		p = append(p, c.at(key)+": "+fmt.Sprintf(format, args...))
	}
	if len(c.RouterID) > routes.MaxNameLen {
		add("router_id", "router_id is %d bytes long, at most %d", len(c.RouterID), routes.MaxNameLen)
	} else if c.RouterID == "" {
		add("router_id", "router_id is required")
	} else if !nameRE.MatchString(c.RouterID) {
		add("router_id", "router_id %q: use letters, digits, '.', '_' and '-'", c.RouterID)
	}
	brokers, bp := c.validateBrokers()
	p = append(p, bp...)
	if c.Reconnect.Min <= 0 || c.Reconnect.Max < c.Reconnect.Min {
		add("reconnect", "reconnect: need 0 < min <= max (min %s, max %s)", time.Duration(c.Reconnect.Min), time.Duration(c.Reconnect.Max))
	}
	p = append(p, c.validateRoutes(brokers)...)
	p = append(p, c.validateLinks(brokers)...)
	p = append(p, c.validateIngress(brokers)...)
	p = append(p, c.validateDestinations(brokers)...)
	if err := routes.CheckDataPath(c.DataPath); err != nil {
		add("data_path", "%v", err)
	}
	if steps, err := pathpolicy.Parse(c.NoPath); err != nil {
		add("no_path", "%v", err)
	} else {
		c.noPath = steps
		for _, st := range steps {
			if st.Action == pathpolicy.StepDeadLetter {
				add("no_path", "no_path: dead-letter needs a route's dead_letter_queue; set it per route")
			}
			if st.Action == pathpolicy.StepReroute && !c.Flooding() {
				add("no_path", "no_path: reroute needs link-state flooding: set topology.secret")
			}
		}
	}
	p = append(p, c.validateAdmin()...)
	if c.StallAfter < Duration(time.Second) {
		add("stall_after", "stall_after %s: want 1s or more", time.Duration(c.StallAfter))
	}
	if c.Metrics.RouteSeries < 0 {
		add("metrics", "metrics.route_series %d: want 0 (no per-route series) or more", c.Metrics.RouteSeries)
	}
	p = append(p, c.validateCluster(brokers)...)
	p = append(p, c.validateTopology()...)
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log", "log.level %q: want debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add("log", "log.format %q: want text or json", c.Log.Format)
	}
	return p
}

// validateRoutes checks each configured route (routes.Spec.Check, with
// the file's brokers and flooding); brokers maps the configured broker
// names.
func (c *Config) validateRoutes(brokers map[string]int) []string {
	var p []string
	seen := map[string]int{}
	net := routes.Network{Flooding: c.Flooding(), Attached: func(b string) bool { _, ok := brokers[b]; return ok }}
	for i := range c.Routes {
		key := fmt.Sprintf("routes[%d]", i)
		spec := c.Routes[i].Resolved()
		add := func(format string, args ...any) {
			p = append(p, c.at(key)+": route "+spec.String()+": "+fmt.Sprintf(format, args...))
		}
		if _, err := spec.Check(net); err != nil {
			var se *routes.SpecError
			if !errors.As(err, &se) {
				add("%v", err)
				continue
			}
			for _, pr := range se.Problems {
				add("%s", pr)
			}
		}
		if j, dup := seen[spec.Identity()]; dup {
			add("defined twice (also at %s)", c.at(fmt.Sprintf("routes[%d]", j)))
		}
		seen[spec.Identity()] = i
	}
	return p
}

// Flooding says whether link-state flooding is on (a secret is given).
func (c *Config) Flooding() bool { return c.Topology.Secret != "" || c.Topology.SecretFile != "" }

// validateLinks checks the configured links against the brokers.
func (c *Config) validateLinks(brokers map[string]int) []string {
	var p []string
	seen := map[[2]string]int{}
	for i, l := range c.Links {
		key := fmt.Sprintf("links[%d]", i)
		add := func(format string, args ...any) {
			p = append(p, c.at(key)+": link "+strings.Join(l.Between, "-")+": "+fmt.Sprintf(format, args...))
		}
		if !c.Flooding() {
			add("links carry multi-hop transit, which needs link-state flooding: set topology.secret")
		}
		if len(l.Between) != 2 {
			add("between: want two broker names, e.g. [rabbit1, rabbit2]")
			continue
		}
		a, b := l.Between[0], l.Between[1]
		for _, n := range l.Between {
			if _, ok := brokers[n]; !ok {
				add("broker %q is not in brokers", n)
			}
		}
		if a == b {
			add("a link joins two different brokers")
		}
		if l.Cost < 0 {
			add("cost %d: want 1 or more (default 1)", l.Cost)
		}
		k := [2]string{min(a, b), max(a, b)}
		if j, dup := seen[k]; dup {
			add("defined twice (also at %s)", c.at(fmt.Sprintf("links[%d]", j)))
		}
		seen[k] = i
	}
	return p
}

func (c *Config) validateTopology() []string {
	var p []string
	add := func(format string, args ...any) {
		p = append(p, c.at("topology")+": topology: "+fmt.Sprintf(format, args...))
	}
	t := c.Topology
	if t.Secret != "" && t.SecretFile != "" {
		add("give secret or secret_file, not both")
	}
	if t.Secret != "" && len(t.Secret) < MinSecretLen {
		add("secret is %d bytes; a network secret needs at least %d, as in a secret_file (e.g. head -c 32 /dev/urandom | base64)", len(t.Secret), MinSecretLen)
	}
	if t.SecretFile != "" {
		// Read as the router reads it at start; judged as mode says.
		if _, err := readSecretFile(t.SecretFile); c.judged("topology.secret_file", err) {
			add("%s", strings.TrimPrefix(err.Error(), "config: topology."))
		}
	}
	if t.Refresh <= 0 {
		add("refresh must be positive")
	}
	if t.MaxAge < 2*t.Refresh {
		add("max_age %s must be at least twice refresh %s", time.Duration(t.MaxAge), time.Duration(t.Refresh))
	}
	if t.DestinationIdle <= 0 {
		add("destination_idle must be positive")
	}
	if t.MaxHops < 1 || t.MaxHops > 255 {
		add("max_hops %d: want 1..255", t.MaxHops)
	}
	if !nameRE.MatchString(t.ControlAddress) {
		add("control_address %q: use letters, digits, '.', '_' and '-'", t.ControlAddress)
	}
	for _, peer := range t.Peers {
		if !nameRE.MatchString(peer) || peer == c.RouterID {
			add("peer %q: want another router's id", peer)
		}
	}
	return p
}

// validateBrokers checks the brokers and returns their names (with their
// index in the file) for the checks that refer to them.
func (c *Config) validateBrokers() (map[string]int, []string) {
	var p []string
	add := func(key, format string, args ...any) {
		p = append(p, c.at(key)+": "+fmt.Sprintf(format, args...))
	}
	if len(c.Brokers) == 0 {
		add("brokers", "no brokers configured")
	}
	seen := map[string]int{}
	for i, b := range c.Brokers {
		key := fmt.Sprintf("brokers[%d]", i)
		if b.Name != "" {
			if j, dup := seen[b.Name]; dup {
				add(key, "broker %q is defined twice (also at %s)", b.Name, c.at(fmt.Sprintf("brokers[%d]", j)))
			}
			seen[b.Name] = i
			switch {
			case len(b.Name) > routes.MaxNameLen:
				add(key, "broker name is %d bytes long, at most %d", len(b.Name), routes.MaxNameLen)
			case !nameRE.MatchString(b.Name):
				add(key, "broker name %q: use letters, digits, '.', '_' and '-'", b.Name)
			}
		}
		if b.URL != "" && len(b.URLs) > 0 {
			add(key, "broker %q: give url or urls, not both", b.Name)
		}
		for _, sb := range b.Bindings {
			if sb.Exchange == "" {
				add(key, "broker %q: a binding needs an exchange", b.Name)
			}
		}
		if b.Password != "" && b.PasswordFile != "" {
			add(key, "broker %q: give password or password_file, not both", b.Name)
		}
		if b.Connections < 0 || b.Connections > MaxConnections {
			add(key, "broker %q: connections %d: want 1..%d (default 1)", b.Name, b.Connections, MaxConnections)
		}
		bc, err := b.brokerConfig(false)
		if err == nil {
			err = bc.Validate()
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				add(key, "broker %q: %s", b.Name, line)
			}
		}
	}
	return seen, p
}
