package router

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/globaldest"
)

// Routers sharing a broker (globaldest/others.go, docs/destinations.md
// "Several routers"): a flow's receiver is a consumer to the broker's
// listing, and only the router running it knows it is not one. So each
// router advertises the flows it runs out of instances at brokers another
// router is attached to, as long as it subtracts them from its own
// listings (while they run and ownConsumerLag after), and every router
// subtracts those the others advertise at its brokers.

// FlowsExt is the advertisement extension carrying the flows this router
// runs (or ran a moment ago) out of instances at brokers another router
// is attached to: {"<broker>": {"<queue>": <flow receivers>}}.
const FlowsExt = "flows"

// maxAdvertisedFlows bounds the flows one router advertises: with names
// of the most bytes (255) about 14 KiB of the advertisement's 64 KiB.
// Past it the first by broker and queue name are advertised: the other
// routers count the rest as consumers, as before there was FlowsExt.
const maxAdvertisedFlows = 50

// publishFlows copies the flows this router subtracts from its listings
// (flowsOut, owned by run) for advertisedFlows, and on a change asks the
// topology driver to advertise at once (flowsChanged): until the other
// routers have it, they count a new flow as a consumer.
func (g *globalDests) publishFlows() {
	g.mu.Lock()
	changed := !maps.Equal(g.flowsAd, g.flowsOut)
	if changed {
		g.flowsAd = maps.Clone(g.flowsOut)
	}
	g.mu.Unlock()
	if changed {
		select {
		case g.flowsChanged <- struct{}{}:
		default: // asked already
		}
	}
}

// advertisedFlows encodes, for FlowsExt, the flows out of the brokers in
// shared that this router may still count among their consumers; nil
// when there are none.
func (g *globalDests) advertisedFlows(shared map[string]bool, now time.Time) json.RawMessage {
	g.mu.Lock()
	var all []instanceCount
	for k, stopped := range g.flowsAd {
		if shared[k[0]] && (stopped.IsZero() || now.Sub(stopped) < ownConsumerLag) {
			all = append(all, instanceCount{k[0], k[1], 1})
		}
	}
	g.mu.Unlock()
	slices.SortFunc(all, func(a, b instanceCount) int {
		return cmp.Or(strings.Compare(a.broker, b.broker), strings.Compare(a.name, b.name))
	})
	return g.encodeCounts(all, maxAdvertisedFlows, &g.flowsTruncOnce,
		"more flows out of brokers shared with other routers than one advertisement carries: the other routers count the rest as consumers")
}

// others is what the other routers advertise about the brokers in own,
// for the core: their flows there (summed: each runs its own receivers),
// and which of own another router is attached to.
func (rc *remoteCounts) others(own []string) globaldest.Others {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	o := globaldest.Others{Flows: map[string]map[string]int{}, Shared: maps.Clone(rc.shared)}
	for _, bs := range rc.by {
		for b, qs := range bs {
			if !slices.Contains(own, b) {
				continue
			}
			if o.Flows[b] == nil {
				o.Flows[b] = map[string]int{}
			}
			for q, n := range qs {
				o.Flows[b][q] += n
			}
		}
	}
	return o
}

// setShared records which of this router's brokers another router is
// attached to (the topology driver, from the link state).
func (rc *remoteCounts) setShared(shared map[string]bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !maps.Equal(rc.shared, shared) {
		rc.shared = shared
		rc.signal()
	}
}

// sharedNow is a copy of what setShared recorded.
func (rc *remoteCounts) sharedNow() map[string]bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return maps.Clone(rc.shared)
}
