// Package routertest holds an in-memory stand-in for a running router
// (router.Service) for tests of what talks to one: the admin API and the
// CLI. It does not import package router (router's own tests use it), so
// the errors it answers the views it does not have with are the caller's:
// router.ErrTopologyOff (Topology, while no snapshot is set),
// router.ErrNotClustered, router.ErrNoDestinations.
package routertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// Service keeps routes by ID, as a router's manager does, and answers the
// listings with what the test set.
type Service struct {
	id          string
	known       []string      // broker names AddRoute accepts
	added       routes.Status // State and Counters of a route added at runtime
	topologyOff error
	clusterOff  error
	destsOff    error

	mu      sync.Mutex
	routes  map[string]routes.Status
	brokers []amqp.Status
	links   []routes.LinkStatus
	topo    *topology.Snapshot
	err     error       // when set, every mutation fails with it
	last    routes.Spec // what AddRoute got last
	partial string      // why the route list is partial (SetPartial)
	// reload and reloadErr are what Reload answers (SetReload).
	reload    api.Reload
	reloadErr error
}

// Options configure a Service.
type Options struct {
	RouterID string
	Known    []string      // brokers routes may name
	Added    routes.Status // State, Since, Detail and Counters given to routes added at runtime
	// TopologyOff is what Topology answers until SetTopology.
	TopologyOff error
	// NotClustered and NoDestinations are what Cluster and
	// GlobalDestinations answer (nil: an error of routertest's own).
	NotClustered, NoDestinations error
	Brokers                      []amqp.Status
	Links                        []routes.LinkStatus
}

// New returns a Service with no routes.
func New(o Options) *Service {
	if o.NotClustered == nil {
		o.NotClustered = errors.New("routertest: no cluster view")
	}
	if o.NoDestinations == nil {
		o.NoDestinations = errors.New("routertest: no global destinations view")
	}
	return &Service{id: o.RouterID, known: o.Known, added: o.Added, topologyOff: o.TopologyOff,
		clusterOff: o.NotClustered, destsOff: o.NoDestinations,
		routes: map[string]routes.Status{}, brokers: o.Brokers, links: o.Links}
}

// AddRoute validates spec, refuses unknown brokers and duplicates, and
// keeps it as a runtime route.
func (f *Service) AddRoute(_ context.Context, spec routes.Spec) (routes.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = spec
	if f.err != nil {
		return routes.Status{}, f.err
	}
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return routes.Status{}, err
	}
	for _, b := range []string{spec.Dest, spec.Src} {
		if !slices.Contains(f.known, b) {
			return routes.Status{}, fmt.Errorf("%w %q (configured: %s)", routes.ErrUnknownBroker, b, strings.Join(f.known, ", "))
		}
	}
	if _, dup := f.routes[spec.ID()]; dup {
		return routes.Status{}, routes.ErrDuplicate
	}
	st := routes.Status{ID: spec.ID(), Spec: spec, Origin: routes.OriginRuntime, State: f.added.State, Since: f.added.Since, Detail: f.added.Detail, Counters: f.added.Counters}
	f.routes[st.ID] = st
	return st, nil
}

// AddConfig adds a route as if from the configuration file, with counts.
func (f *Service) AddConfig(spec routes.Spec, c routes.Counters) routes.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	spec = spec.WithDefaults()
	st := routes.Status{ID: spec.ID(), Spec: spec, Origin: routes.OriginConfig, State: routes.StateOperational, Counters: c}
	f.routes[st.ID] = st
	return st
}

// DeleteRoute deletes the route with spec's identity.
func (f *Service) DeleteRoute(ctx context.Context, spec routes.Spec) error {
	return f.DeleteRouteID(ctx, spec.ID())
}

// DeleteRouteID deletes a runtime route.
func (f *Service) DeleteRouteID(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	st, ok := f.routes[id]
	switch {
	case !ok:
		return fmt.Errorf("%w with id %s", routes.ErrNotFound, id)
	case st.Origin == routes.OriginConfig:
		return routes.ErrConfigRoute
	}
	delete(f.routes, id)
	return nil
}

// FlushRoutes deletes the runtime routes (to dest, if given).
func (f *Service) FlushRoutes(_ context.Context, dest string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	n := 0
	for id, st := range f.routes {
		if st.Origin == routes.OriginRuntime && (dest == "" || st.Spec.Dest == dest) {
			delete(f.routes, id)
			n++
		}
	}
	return n, nil
}

// Routes lists the routes, sorted by their text.
func (f *Service) Routes() []routes.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]routes.Status, 0, len(f.routes))
	for _, st := range f.routes {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.String() < out[j].Spec.String() })
	return out
}

// RoutesPage pages Routes, with the reason SetPartial gave.
func (f *Service) RoutesPage(after string, limit int) ([]routes.Status, string, string, error) {
	page, next, err := routes.Page(f.Routes(), after, limit)
	f.mu.Lock()
	defer f.mu.Unlock()
	return page, next, f.partial, err
}

// SetPartial makes the route list partial, for the reason given ("":
// whole), as a cluster member's is while its store cannot be read.
func (f *Service) SetPartial(reason string) { f.mu.Lock(); f.partial = reason; f.mu.Unlock() }

// OwnRoutes is Routes: the fake is a single router.
func (f *Service) OwnRoutes() []routes.Status { return f.Routes() }

// Cluster answers Options.NotClustered.
func (f *Service) Cluster(context.Context) (api.ClusterStatus, error) {
	return api.ClusterStatus{}, f.clusterOff
}

// GlobalDestinations answers Options.NoDestinations.
func (f *Service) GlobalDestinations(context.Context) (api.Destinations, error) {
	return api.Destinations{}, f.destsOff
}

// Reload answers what SetReload set (an empty reload at first).
func (f *Service) Reload(context.Context) (api.Reload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reload, f.reloadErr
}

// SetReload sets what Reload answers.
func (f *Service) SetReload(res api.Reload, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reload, f.reloadErr = res, err
}

// Links returns the links set.
func (f *Service) Links() []routes.LinkStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.links)
}

// AddLink refuses: the fake holds no links but those SetLinks gives.
func (f *Service) AddLink(context.Context, api.Link) error {
	return errors.New("routertest: links are set with SetLinks")
}

// DeleteLink refuses as AddLink does.
func (f *Service) DeleteLink(context.Context, api.Link) error {
	return errors.New("routertest: links are set with SetLinks")
}

// Brokers returns the broker statuses set.
func (f *Service) Brokers() []amqp.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.brokers)
}

// RouterID names the router.
func (f *Service) RouterID() string { return f.id }

// Topology answers the snapshot set, or TopologyOff.
func (f *Service) Topology(context.Context) (topology.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.topo == nil {
		return topology.Snapshot{}, f.topologyOff
	}
	return *f.topo, nil
}

// SetErr makes every mutation fail with err (nil: succeed again).
func (f *Service) SetErr(err error) { f.mu.Lock(); f.err = err; f.mu.Unlock() }

// SetTopology sets the snapshot Topology answers.
func (f *Service) SetTopology(s *topology.Snapshot) { f.mu.Lock(); f.topo = s; f.mu.Unlock() }

// SetLinks sets what Links answers.
func (f *Service) SetLinks(l []routes.LinkStatus) { f.mu.Lock(); f.links = l; f.mu.Unlock() }

// UpdateBrokers changes the broker statuses under the lock.
func (f *Service) UpdateBrokers(change func([]amqp.Status) []amqp.Status) {
	f.mu.Lock()
	f.brokers = change(f.brokers)
	f.mu.Unlock()
}

// Last is the spec AddRoute got last.
func (f *Service) Last() routes.Spec { f.mu.Lock(); defer f.mu.Unlock(); return f.last }
