package globaldest

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// Status is one global destination as the core sees it, for `fedrouter
// destination list` and the admin API.
type Status struct {
	Name       string     `json:"name"`
	Entry      string     `json:"entry"` // the pattern of its entry
	Kind       string     `json:"kind"`
	State      string     `json:"state"` // global, local, deleting, deleted
	Properties string     `json:"properties"`
	Origin     string     `json:"origin"` // the broker it was first seen at
	Instances  []Instance `json:"instances"`
	Problems   []string   `json:"problems,omitempty"` // conflicts, orphans
	Flows      []Flow     `json:"flows,omitempty"`    // where messages move now
	// Limits: the limits over all instances, with each broker's share
	// (the router's: shares.go).
	Limits *LimitsView `json:"limits,omitempty"`
}

// Instance is the destination at one broker of its span.
type Instance struct {
	Broker     string `json:"broker"`
	State      string `json:"state"` // present, creating, deleting, absent, not listed
	Messages   int    `json:"messages"`
	Consumers  int    `json:"consumers"`
	Bytes      int64  `json:"bytes,omitempty"`      // the bodies' bytes it holds
	Properties string `json:"properties,omitempty"` // when they differ from the destination's
}

// Status lists the destinations, by name.
func (c *Core) Status() []Status {
	out := []Status{}
	for _, name := range c.sortedNames() {
		d := c.dests[name]
		st := Status{Name: name, Entry: c.entries[d.entry].Pattern, Kind: d.kind.String(), Properties: d.props.String(), Origin: d.origin, Instances: []Instance{}, Flows: d.flowsOf()}
		switch {
		case d.deleting != nil:
			st.State = "deleting"
		case d.deleted:
			st.State = "deleted"
		case c.propagates(d):
			st.State = "global"
		default:
			st.State = "local"
		}
		for _, b := range c.entries[d.entry].Brokers {
			st.Instances = append(st.Instances, c.instance(d, b))
		}
		for _, b := range slices.Sorted(maps.Keys(d.remote)) {
			if in := d.remote[b]; in.consumers > 0 {
				// Known from another router's advertisement: its
				// consumers only.
				st.Instances = append(st.Instances, Instance{Broker: b, State: "remote", Consumers: in.consumers})
			}
		}
		for key, msg := range d.reported {
			if strings.HasPrefix(key, "props:") || strings.HasPrefix(key, "orphan:") {
				st.Problems = append(st.Problems, msg)
			}
		}
		sort.Strings(st.Problems)
		out = append(out, st)
	}
	return out
}

func (c *Core) instance(d *dest, b string) Instance {
	in := d.inst[b]
	is := Instance{Broker: b, State: "absent"}
	switch {
	case !c.brokers[b].up():
		is.State = "not listed"
	case in == nil:
	case in.present && in.expectGone:
		is.State = "deleting"
	case in.present:
		is.State = "present"
	case in.pending:
		is.State = "creating"
	}
	if in != nil && in.present {
		is.Messages, is.Consumers, is.Bytes = in.messages, in.consumers, in.bytes
		if !in.props.Equal(d.props) {
			is.Properties = in.props.String()
		}
	}
	return is
}
