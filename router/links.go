package router

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// Links added at runtime (qpid-route's link add): a pair of this router's
// brokers, both ways, that it advertises in its link state and carries
// transit over, as an entry of links: in the configuration — held in
// memory only: a restart forgets them (links: keeps one).

// ErrLinkConfigured: the link comes from links: in the configuration.
var ErrLinkConfigured = errors.New("router: the link is in links: in the configuration file; edit the file to remove it")

// ErrNoLink: no link added at runtime between these brokers.
var ErrNoLink = errors.New("router: no such link")

// ErrLinkDuplicate: the link exists already; nothing changed.
var ErrLinkDuplicate = errors.New("router: duplicate link")

// runtimeLinks are the links added at runtime, by ordered pair, with
// their cost.
type runtimeLinks struct {
	mu    sync.Mutex
	pairs map[[2]string]int64 // both directions of each link; guarded by mu
}

// snapshot copies the pairs.
func (l *runtimeLinks) snapshot() map[[2]string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.pairs)
}

// AddLink adds a link between two of the router's brokers (names or
// host:port, as routes take them).
func (r *Router) AddLink(_ context.Context, req api.Link) error {
	a, b, err := r.linkEnds(req)
	if err != nil {
		return err
	}
	cost := int64(req.Cost)
	if req.Cost == 0 {
		cost = 1
	}
	if cost < 1 || cost > topology.MaxCost {
		return &routes.SpecError{Problems: []string{fmt.Sprintf("cost %d: want 1..%d", req.Cost, topology.MaxCost)}}
	}
	if _, ok := r.cfg.LinkPairs()[[2]string{a, b}]; ok {
		return fmt.Errorf("%w: %s <-> %s (links: in the configuration)", ErrLinkDuplicate, a, b)
	}
	r.links.mu.Lock()
	if r.links.pairs == nil {
		r.links.pairs = map[[2]string]int64{}
	}
	_, dup := r.links.pairs[[2]string{a, b}]
	if !dup {
		r.links.pairs[[2]string{a, b}], r.links.pairs[[2]string{b, a}] = cost, cost
	}
	r.links.mu.Unlock()
	if dup {
		return fmt.Errorf("%w: %s <-> %s", ErrLinkDuplicate, a, b)
	}
	r.routes.SetLinks(pairList(r.linkPairs()))
	r.log.Info().Str("link", a+" <-> "+b).Int64("cost", cost).Msg("link added")
	return nil
}

// DeleteLink deletes a link AddLink added.
func (r *Router) DeleteLink(_ context.Context, req api.Link) error {
	a, b, err := r.linkEnds(req)
	if err != nil {
		return err
	}
	if _, ok := r.cfg.LinkPairs()[[2]string{a, b}]; ok {
		return fmt.Errorf("%w: %s <-> %s", ErrLinkConfigured, a, b)
	}
	r.links.mu.Lock()
	_, ok := r.links.pairs[[2]string{a, b}]
	delete(r.links.pairs, [2]string{a, b})
	delete(r.links.pairs, [2]string{b, a})
	r.links.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s <-> %s (link list shows the links)", ErrNoLink, req.Dest, req.Src)
	}
	r.routes.SetLinks(pairList(r.linkPairs()))
	r.log.Info().Str("link", a+" <-> "+b).Msg("link deleted")
	return nil
}

// linkEnds resolves a link's brokers: two distinct brokers of this
// router, with link-state flooding on (a link is what it advertises).
func (r *Router) linkEnds(req api.Link) (string, string, error) {
	if !r.cfg.Flooding() {
		return "", "", fmt.Errorf("%w: a link is advertised in the link state and carries its transit", ErrTopologyOff)
	}
	var p []string
	a, err := r.routes.Resolve(req.Dest)
	if err != nil {
		return "", "", err
	}
	b, err := r.routes.Resolve(req.Src)
	if err != nil {
		return "", "", err
	}
	if a == "" || b == "" {
		p = append(p, "a link needs two brokers: dest and src")
	} else if a == b {
		p = append(p, fmt.Sprintf("dest and src are the same broker %q", a))
	}
	if len(p) > 0 {
		return "", "", &routes.SpecError{Problems: p}
	}
	return a, b, nil
}

// linkPairs are the links the router holds besides its routes': the
// configured ones and those added at runtime, cheapest cost first.
func (r *Router) linkPairs() map[[2]string]int64 {
	out := r.cfg.LinkPairs()
	for k, c := range r.links.snapshot() {
		if old, ok := out[k]; !ok || c < old {
			out[k] = c
		}
	}
	return out
}

// pairList is the pairs of m, sorted.
func pairList(m map[[2]string]int64) [][2]string {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, func(x, y [2]string) int { return slices.Compare(x[:], y[:]) })
	return out
}
