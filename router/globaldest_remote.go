package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/fedrouter/fedrouter/routes"
)

// ConsumersExt is the advertisement extension carrying, for the global
// destinations, the consumers at this router's brokers:
// {"<broker>": {"<queue>": <consumers>}}. Other routers make those
// brokers flow targets when none of theirs has consumers
// (docs/destinations.md, "Several routers").
const ConsumersExt = "consumers"

// maxAdvertisedConsumers bounds the instances one router advertises (the
// whole advertisement is at most topology.MaxLSASize, 64 KiB); past it the
// instances with the most consumers are kept.
const maxAdvertisedConsumers = 200

// advertised encodes the instances with consumers at this router's
// brokers, for ConsumersExt; nil when there are none.
func (g *globalDests) advertised() json.RawMessage {
	g.mu.Lock()
	var all []instanceCount
	for _, d := range g.status {
		for _, in := range d.Instances {
			if in.State == "present" && in.Consumers > 0 {
				all = append(all, instanceCount{in.Broker, d.Name, in.Consumers})
			}
		}
	}
	g.mu.Unlock()
	sort.SliceStable(all, func(i, j int) bool { return all[i].n > all[j].n })
	return g.encodeCounts(all, maxAdvertisedConsumers, &g.truncatedOnce,
		"more global destination instances with consumers than one advertisement carries: those with the most consumers are advertised")
}

// instanceCount is a count at one instance (broker, queue name).
type instanceCount struct {
	broker, name string
	n            int
}

// encodeCounts encodes the first most of all as {"<broker>": {"<queue>":
// n}} (nil when empty), logging tooMany once if there are more.
func (g *globalDests) encodeCounts(all []instanceCount, most int, once *sync.Once, tooMany string) json.RawMessage {
	if len(all) > most {
		once.Do(func() { g.log.Warn().Int("instances", len(all)).Int("advertised", most).Msg(tooMany) })
		all = all[:most]
	}
	out := map[string]map[string]int{}
	for _, e := range all {
		if out[e.broker] == nil {
			out[e.broker] = map[string]int{}
		}
		out[e.broker][e.name] += e.n
	}
	return extValue(out, len(all))
}

// remoteCounts holds what the other routers advertise in one extension
// of counts per instance, {"<broker>": {"<queue>": <n>}} (ConsumersExt,
// FlowsExt), checked: the topology driver stores, the global destinations
// read.
type remoteCounts struct {
	ext string // the extension's key, for errors
	max int    // the most instances one router's value may name
	mu  sync.Mutex
	raw map[string]string                    // guarded by mu: router id → the value last parsed
	by  map[string]map[string]map[string]int // guarded by mu: router id → broker → queue → n
	// shared: this router's brokers another router is attached to (set
	// for FlowsExt, globaldest_flows.go); guarded by mu.
	shared map[string]bool
	// changed, when set, is signalled (never blocking) when a value or
	// shared changes: the global destinations run a round at once.
	changed chan struct{}
}

// store takes every router's value of the extension (nil: none). A value
// that is not what a router writes — or that claims instances at a broker
// its advertisement does not say it is attached to (attached) — is
// refused, naming the router, and that router's previous one is dropped:
// nothing is guessed from it.
func (rc *remoteCounts) store(self string, ext map[string]json.RawMessage, attached func(router, broker string) bool) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.raw == nil {
		rc.raw, rc.by = map[string]string{}, map[string]map[string]map[string]int{}
	}
	changed := false
	for id := range rc.raw {
		if _, ok := ext[id]; !ok { // its advertisement expired
			delete(rc.by, id)
			delete(rc.raw, id)
			changed = true
		}
	}
	var bad []error
	for id, v := range ext {
		if old, ok := rc.raw[id]; id == self || (ok && old == string(v)) {
			continue
		}
		rc.raw[id], changed = string(v), true
		delete(rc.by, id)
		if v == nil {
			continue
		}
		m, err := decodeCounts(v, rc.max)
		for b := range m {
			if err == nil && !attached(id, b) {
				err = fmt.Errorf("instances at %s, a broker it is not attached to", b)
			}
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("router %s: extension %s: %w", id, rc.ext, err))
			continue
		}
		rc.by[id] = m
	}
	if changed {
		rc.signal()
	}
	return errors.Join(bad...)
}

// signal tells the reader of changed, if any, without waiting (caller
// holds mu).
func (rc *remoteCounts) signal() {
	select {
	case rc.changed <- struct{}{}:
	default: // a round is due already, or no reader
	}
}

// decodeCounts reads and bounds one router's value of ConsumersExt or
// FlowsExt (the same shape and bound).
func decodeCounts(v json.RawMessage, most int) (map[string]map[string]int, error) {
	var m map[string]map[string]int
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, err
	}
	n := 0
	for b, qs := range m {
		if len(b) > routes.MaxNameLen {
			return nil, fmt.Errorf("broker name of %d bytes", len(b))
		}
		for q, c := range qs {
			n++
			if len(q) > routes.MaxNameLen || c < 0 {
				return nil, fmt.Errorf("%s at %s: %d", q, b, c)
			}
		}
	}
	if n > most {
		return nil, fmt.Errorf("%d instances, at most %d", n, most)
	}
	return m, nil
}

// merged is broker → queue → consumers over every router, leaving out
// the brokers in skip (this router's own: its listing is fresher); two
// routers advertising one broker: the larger count (one of them listed
// it later).
func (rc *remoteCounts) merged(skip []string) map[string]map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]map[string]int{}
	for _, bs := range rc.by {
		for b, qs := range bs {
			if slices.Contains(skip, b) {
				continue
			}
			if out[b] == nil {
				out[b] = map[string]int{}
			}
			for q, n := range qs {
				out[b][q] = max(out[b][q], n)
			}
		}
	}
	return out
}
