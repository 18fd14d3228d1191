package topology

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Snapshot is the node's view of the network for operators and the admin
// API: every router heard from, every broker and link with who advertised
// it, and the routes from every broker (what `qdstat -n` shows, for the
// whole network). Plain data, JSON-serialisable.
type Snapshot struct {
	Router   string         `json:"router"`
	Routers  []RouterView   `json:"routers"`
	Brokers  []BrokerView   `json:"brokers"`
	Links    []LinkView     `json:"links"`
	Routes   []BrokerRoutes `json:"routes"`
	Radius   int            `json:"radius"`
	Counters Counters       `json:"counters"`
	// Remembered is how many expired routers are remembered against
	// replays of their last LSA (at most Config.MaxRemembered).
	Remembered int `json:"remembered"`
	// ControlDropped counts the control messages the driver's transport
	// dropped before the node saw them, by reason. Filled in by the
	// driver; Node.Snapshot leaves it nil.
	ControlDropped map[string]uint64 `json:"control_dropped,omitempty"`
}

// RouterView is one originator and the LSA held from it. In JSON
// (snapshot_json.go) the instance is a string (a start time in
// nanoseconds does not fit a JavaScript number) and the age a Go duration
// string.
type RouterView struct {
	Router   string        `json:"router"`
	Instance int64         `json:"instance,string"`
	Seq      uint64        `json:"seq"`
	Age      time.Duration `json:"-"`              // since received (ours: since originated)
	From     string        `json:"from,omitempty"` // the broker it last arrived on
	Self     bool          `json:"self,omitempty"`
	// Ext are the router's advertised extensions, e.g. "demand".
	Ext map[string]json.RawMessage `json:"ext,omitempty"`
}

// BrokerView is a broker and the routers attached to it.
type BrokerView struct {
	Name    string       `json:"name"`
	Routers []Attachment `json:"routers"`
}

// Attachment is one router's view of a broker's connection state.
type Attachment struct {
	Router string `json:"router"`
	State  string `json:"state"`
}

// LinkView is one advertised link. State is "up", "down" (the router says
// so) or "broker-down" (an end is not Operational for that router). In
// JSON the age is a Go duration string (snapshot_json.go).
type LinkView struct {
	From   string        `json:"from"`
	To     string        `json:"to"`
	Cost   int64         `json:"cost"`
	State  string        `json:"state"`
	Router string        `json:"router"`
	Age    time.Duration `json:"-"`
}

// BrokerRoutes are the routes from one broker.
type BrokerRoutes struct {
	Broker string      `json:"broker"`
	Routes []RouteView `json:"routes"`
}

// RouteView is one row of the table. ValidOrigins is set on routes to a
// direct neighbour: the origins whose multicast copies cross that link.
type RouteView struct {
	Dest         string   `json:"dest"`
	NextHop      string   `json:"next_hop"`
	NextHops     []string `json:"next_hops"`
	Cost         int64    `json:"cost"`
	Hops         int      `json:"hops"`
	ValidOrigins []string `json:"valid_origins,omitempty"`
}

// advertiser is one router's LSA content as the views need it.
type advertiser struct {
	router  string
	brokers []BrokerState
	links   []Link
	age     time.Duration
}

// Snapshot returns the current view; ages are measured at now.
func (n *Node) Snapshot(now time.Time) Snapshot {
	s := Snapshot{Router: n.cfg.RouterID, Radius: n.paths.Radius(), Counters: n.counters, Remembered: len(n.gone), Links: []LinkView{}}
	ads := n.advertisers(now, &s)
	s.Brokers = brokerViews(ads)
	for _, a := range ads {
		for _, k := range a.links {
			s.Links = append(s.Links, LinkView{From: k.From, To: k.To, Cost: k.Cost,
				State: linkState(a.brokers, k), Router: a.router, Age: a.age})
		}
	}
	slices.SortStableFunc(s.Links, func(a, b LinkView) int {
		return compareEdges(&Edge{From: a.From, To: a.To, Cost: a.Cost}, &Edge{From: b.From, To: b.To, Cost: b.Cost})
	})
	s.Routes = n.paths.routeViews()
	return s
}

// advertisers lists ourselves, then every held LSA by router id, and fills
// in the router views on the way.
func (n *Node) advertisers(now time.Time, s *Snapshot) []advertiser {
	var age time.Duration
	if n.own.Seq > 0 {
		age = now.Sub(n.lastOrig)
	}
	ads := []advertiser{{n.cfg.RouterID, n.brokers, n.links, age}}
	s.Routers = append(s.Routers, RouterView{Router: n.cfg.RouterID, Instance: n.cfg.Instance, Seq: n.seq, Age: age, Self: true, Ext: n.own.Ext})
	for _, id := range sortedKeys(n.db) {
		e := n.db[id]
		age := now.Sub(e.at)
		ads = append(ads, advertiser{id, e.lsa.Brokers, e.lsa.Links, age})
		s.Routers = append(s.Routers, RouterView{Router: id, Instance: e.lsa.Instance, Seq: e.lsa.Seq, Age: age, From: e.from, Ext: e.lsa.Ext})
	}
	return ads
}

func brokerViews(ads []advertiser) []BrokerView {
	byName := map[string]*BrokerView{}
	for _, a := range ads {
		for _, b := range a.brokers {
			v := byName[b.Name]
			if v == nil {
				v = &BrokerView{Name: b.Name}
				byName[b.Name] = v
			}
			v.Routers = append(v.Routers, Attachment{Router: a.router, State: b.State})
		}
	}
	out := []BrokerView{}
	for _, name := range sortedKeys(byName) {
		out = append(out, *byName[name])
	}
	return out
}

func linkState(brokers []BrokerState, k Link) string {
	switch {
	case !k.Up:
		return "down"
	case !operational(brokers, k.From) || !operational(brokers, k.To):
		return "broker-down"
	}
	return "up"
}

func (p *Paths) routeViews() []BrokerRoutes {
	out := []BrokerRoutes{}
	for _, src := range p.names {
		br := BrokerRoutes{Broker: src, Routes: []RouteView{}}
		for _, r := range p.Routes(src) {
			v := RouteView{Dest: r.Dest, NextHop: r.NextHop, NextHops: r.NextHops, Cost: r.Cost, Hops: r.Hops}
			if p.link(p.index[src], p.index[r.Dest]) > 0 { // ValidOrigins only matter on a direct link
				v.ValidOrigins = p.ValidOrigins(src, r.Dest)
			}
			br.Routes = append(br.Routes, v)
		}
		out = append(out, br)
	}
	return out
}

// DOT renders the brokers and links as a Graphviz digraph: one node per
// broker, one edge per advertised link labelled with its cost and router;
// links that are not up are dashed and grey. Output is deterministic.
func (s Snapshot) DOT() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n", "fedrouter "+s.Router)
	b.WriteString("  node [shape=box];\n")
	for _, br := range s.Brokers {
		var rs []string
		for _, a := range br.Routers {
			rs = append(rs, a.Router+":"+a.State)
		}
		fmt.Fprintf(&b, "  %q [tooltip=%q];\n", br.Name, strings.Join(rs, " "))
	}
	for _, k := range s.Links {
		style := ""
		if k.State != "up" {
			style = fmt.Sprintf(", style=dashed, color=gray, tooltip=%q", k.State)
		}
		fmt.Fprintf(&b, "  %q -> %q [label=%q%s];\n", k.From, k.To, fmt.Sprintf("%d %s", k.Cost, k.Router), style)
	}
	b.WriteString("}\n")
	return b.String()
}
