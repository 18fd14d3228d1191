package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/cluster"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/internal/ratelog"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/store"
	"github.com/fedrouter/fedrouter/store/pgstore"
)

// clusterPart is the router as a member of a router cluster
// (docs/cluster.md): the routes live in the store, and the member runs
// those whose leases it holds. Its goroutine (connect, then the member's
// loop) is owned by group and stopped by stop, before the routes.
type clusterPart struct {
	r      *Router
	log    zerolog.Logger
	params cluster.Params
	info   store.Member
	group  *group.Group

	listWarn *ratelog.Limiter // the route list's store errors

	ready  chan struct{} // closed once st and member are set
	st     store.Store
	member *cluster.Member
}

// ErrStoreUnavailable: the router is a cluster member whose store is not
// reachable (yet): route changes cannot be made now; retry.
var ErrStoreUnavailable = errors.New("router: the cluster store is unreachable; retry later")

// startCluster opens the store (a wrong password, a bad URL or a newer
// schema fail the start; an unreachable store is retried in the
// background, with backoff), writes the configured routes into it and
// starts the member's loop.
func (r *Router) startCluster(brokers map[string]amqp.Broker) error {
	cs := r.cfg.Cluster
	url, err := r.cfg.StoreURL()
	if err != nil {
		return err
	}
	attached := make([]string, 0, len(brokers))
	for name := range brokers {
		attached = append(attached, name)
	}
	slices.Sort(attached)
	adminURL := cs.AdminURL
	if adminURL == "" && !r.cfg.AdminOff() {
		adminURL = "http://" + r.cfg.Admin.Listen
	}
	c := &clusterPart{r: r, log: r.log.With().Str("cluster", cs.Name).Logger(), group: group.New(r.ctx), ready: make(chan struct{}), listWarn: ratelog.New(10 * time.Second),
		params: cluster.Params{Self: r.cfg.RouterID, Heartbeat: time.Duration(cs.Heartbeat), SuspectAfter: cs.SuspectAfter,
			Lease: time.Duration(cs.Lease), Attached: attached, Local: cs.LocalBrokers},
		info: store.Member{ID: r.cfg.RouterID, Incarnation: fmt.Sprintf("%x", time.Now().UnixNano()), AdminURL: adminURL,
			Brokers: attached, Local: cs.LocalBrokers}}
	st, err := c.open(r.ctx, url)
	if err != nil && !pgstore.Temporary(err) {
		return fmt.Errorf("router: cluster %s: %w", cs.Name, err)
	}
	r.cluster = c
	c.group.Go(func(ctx context.Context) { c.run(ctx, url, st, err) })
	return nil
}

func (c *clusterPart) open(ctx context.Context, url string) (store.Store, error) {
	call, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := pgstore.Open(call, url, c.r.cfg.Cluster.Name, pgstore.Options{})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return st, nil
}

// run retries opening the store until it answers, then writes the
// configured routes and runs the member until ctx ends (then it hands its
// routes off and leaves).
func (c *clusterPart) run(ctx context.Context, url string, st store.Store, err error) {
	for attempt := 0; st == nil; attempt++ {
		delay := c.r.cfg.Backoff().Delay(attempt)
		c.log.Warn().Err(err).Dur("retry_in", delay).Msg("cluster store unreachable; retrying")
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		if st, err = c.open(ctx, url); err != nil && !pgstore.Temporary(err) {
			c.log.Error().Err(err).Msg("cluster store refused this member; it runs no routes (fix the configuration and restart)")
			return
		}
	}
	defer st.Close()
	c.putConfigured(ctx, st)
	c.st = st
	c.member = cluster.NewMember(c.params, c.info, st, runner{c.r}, c.log)
	cadence := &reportCadence{own: c.own, now: time.Now}
	c.member.Publish(cadence.report)
	close(c.ready)
	c.log.Info().Str("member", c.params.Self).Dur("heartbeat", c.params.Heartbeat).Dur("lease", c.params.Lease).Msg("joined the router cluster")
	c.member.Run(ctx)
}

// putConfigured writes this member's configured routes into the store;
// a route the store has with another definition keeps the store's, and
// the conflict is reported.
func (c *clusterPart) putConfigured(ctx context.Context, st store.Store) {
	snap, err := st.Snapshot(ctx)
	if err != nil {
		c.log.Warn().Err(err).Msg("cluster: reading the store's routes failed; the configured routes are put without comparing")
	}
	have := map[string][]byte{}
	for _, rr := range snap.Routes {
		have[rr.ID] = rr.Spec
	}
	for _, spec := range c.r.cfg.RouteSpecs() {
		n, err := c.r.routes.Normalize(spec)
		if err != nil {
			c.log.Error().Err(err).Str("route", spec.String()).Msg("cluster: configured route refused")
			continue
		}
		data, err := json.Marshal(n)
		if err != nil {
			continue // a Spec always marshals
		}
		if old, ok := have[n.ID()]; ok {
			if !sameJSON(old, data) {
				c.log.Warn().Str("route", n.ID()).Str("spec", n.String()).Msg("cluster: configured route differs from the store's definition of the same route: the store's is kept (delete it through the API to replace it)")
			}
			continue
		}
		if _, err := st.PutRoute(ctx, store.RouteDef{ID: n.ID(), Spec: data, Origin: string(routes.OriginConfig)}); err != nil {
			c.log.Warn().Err(err).Str("route", n.ID()).Msg("cluster: putting a configured route failed")
		}
	}
}

// sameJSON compares two JSON documents by value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x) // maps marshal with sorted keys
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// stop ends the member's loop: it hands its routes off and leaves.
func (c *clusterPart) stop() { c.group.Stop() }

// store returns the store once the member has joined.
func (c *clusterPart) store() (store.Store, error) {
	select {
	case <-c.ready:
		return c.st, nil
	default:
		return nil, ErrStoreUnavailable
	}
}

// runner carries the member's actions out on the route manager.
type runner struct{ r *Router }

func (x runner) Place(data []byte) (src, dest string, push, remote bool, err error) {
	var s routes.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return "", "", false, false, err
	}
	x.r.mu.Lock()
	_, attached := x.r.pools[s.Dest]
	x.r.mu.Unlock()
	return s.Src, s.Dest, s.Push, !attached && x.r.cfg.Flooding(), nil
}

func (x runner) Run(id string, data []byte, epoch int64, fence func() bool) error {
	var s routes.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	if s.ID() != id {
		return fmt.Errorf("router: the store's route %s holds the definition of %s", id, s.ID())
	}
	return x.r.routes.Hold(s, routes.OriginRuntime, fence)
}

func (x runner) Halt(ctx context.Context, id string, how cluster.HaltMode) {
	_, _ = x.r.routes.Halt(ctx, id, routes.HaltMode{Drain: how.Drain, Deleted: how.Deleted})
}
