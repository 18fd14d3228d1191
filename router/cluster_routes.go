package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/store"
)

// The admin API's route calls on a cluster member: definitions are
// written to the store, whichever member receives them; the member that
// wins the route's lease runs it (within a heartbeat or two).

// storeCallTimeout bounds one store call made for an API request.
const storeCallTimeout = 5 * time.Second

func (c *clusterPart) add(ctx context.Context, spec routes.Spec) (routes.Status, error) {
	n, err := c.r.routes.Admit(spec)
	if err != nil {
		return routes.Status{}, err
	}
	st, err := c.store()
	if err != nil {
		return routes.Status{}, err
	}
	data, err := json.Marshal(n)
	if err != nil {
		return routes.Status{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	created, err := st.PutRoute(ctx, store.RouteDef{ID: n.ID(), Spec: data, Origin: string(routes.OriginRuntime)})
	if err != nil {
		return routes.Status{}, storeErr(err)
	}
	if !created {
		return routes.Status{}, routes.ErrDuplicate
	}
	c.log.Info().Str("route", n.ID()).Str("spec", n.String()).Msg("route added to the cluster")
	return routes.Status{ID: n.ID(), Spec: n, Origin: routes.OriginRuntime, State: routes.StateWaiting, Since: time.Now(),
		Detail: "added to the cluster: the member that claims it runs it"}, nil
}

// storeErr says a store failure in the admin API's terms: retry later.
func storeErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %w", routes.ErrNotFound, err)
	}
	return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
}

// deleteSpec deletes the route with spec's identity, its brokers
// resolved as an add resolves them.
func (c *clusterPart) deleteSpec(ctx context.Context, spec routes.Spec) error {
	spec, err := c.r.routes.Normalize(spec)
	if err != nil {
		return err
	}
	return c.deleteID(ctx, spec.ID())
}

func (c *clusterPart) deleteID(ctx context.Context, id string) error {
	st, err := c.store()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	snap, err := st.Snapshot(ctx)
	if err != nil {
		return storeErr(err)
	}
	for _, rr := range snap.Routes {
		if rr.ID == id && rr.Origin == string(routes.OriginConfig) {
			return fmt.Errorf("%w: %s (in a member's configuration file)", routes.ErrConfigRoute, id)
		}
	}
	if err := c.refuseTakeovers(snap, func(rr store.RouteRow) bool { return rr.ID == id }); err != nil {
		return err
	}
	return c.deleteRuntime(ctx, st, id)
}

// deleteRuntime deletes a definition known to be a runtime route's.
func (c *clusterPart) deleteRuntime(ctx context.Context, st store.Store, id string) error {
	if err := st.DeleteRoute(ctx, id); err != nil {
		return storeErr(err)
	}
	c.log.Info().Str("route", id).Msg("route deleted from the cluster")
	return nil
}

func (c *clusterPart) flush(ctx context.Context, dest string) (int, error) {
	st, err := c.store()
	if err != nil {
		return 0, err
	}
	read, cancel := context.WithTimeout(ctx, storeCallTimeout)
	snap, err := st.Snapshot(read)
	cancel()
	if err != nil {
		return 0, storeErr(err)
	}
	var ids []string // the snapshot says which are runtime routes: no read per delete
	flushed := map[string]bool{}
	for _, rr := range snap.Routes {
		if runtimeRoute(rr) && (dest == "" || c.specOf(rr).Dest == dest) {
			ids, flushed[rr.ID] = append(ids, rr.ID), true
		}
	}
	// All or nothing: a flush that meets a takeover deletes nothing.
	if err := c.refuseTakeovers(snap, func(rr store.RouteRow) bool { return flushed[rr.ID] }); err != nil {
		return 0, err
	}
	// One statement for all: a route already gone (deleted meanwhile by
	// another member) counts as flushed, as it did one by one.
	call, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	deleted, err := st.DeleteRoutes(call, ids)
	if err != nil {
		return 0, storeErr(err)
	}
	c.log.Info().Int("routes", len(ids)).Int("deleted", deleted).Str("dest", dest).Msg("routes flushed from the cluster")
	return len(ids), nil
}

// specOf is a store row's route spec (the zero Spec when this member
// cannot read it: listed with its error by list).
func (c *clusterPart) specOf(rr store.RouteRow) routes.Spec {
	var s routes.Spec
	_ = json.Unmarshal(rr.Spec, &s) // unreadable: matches no destination
	return s
}

// listStoreTimeout bounds the store read of a route list: past it the
// member lists its own routes (the store is down; the data plane is not).
const listStoreTimeout = 2 * time.Second

// own is the routes this member runs, with itself as their holder and
// the epoch it runs them under (0 before the member has joined).
func (c *clusterPart) own() []routes.Status {
	epochs := map[string]int64{}
	select {
	case <-c.ready:
		_, _, held := c.member.Status()
		for _, l := range held {
			epochs[l.Route] = l.Epoch
		}
	default:
	}
	list := c.r.routes.List()
	for i := range list {
		list[i].Holder, list[i].Epoch = c.params.Self, epochs[list[i].ID]
	}
	return list
}

// list is every route of the cluster; only this member's own when the
// store cannot be read.
func (c *clusterPart) list() []routes.Status {
	list, _ := c.listPartial()
	return list
}

// partialList says why a member lists its own routes only.
const partialList = "the cluster store cannot be read: this member's routes only are listed"

// listPartial is list, with partialList when it is this member's only.
func (c *clusterPart) listPartial() ([]routes.Status, string) {
	ctx, cancel := context.WithTimeout(c.r.ctx, listStoreTimeout)
	defer cancel()
	list, err := c.read(ctx)
	if err == nil {
		return list, ""
	}
	// Once, then at most every 10 s with a count: a dashboard polling
	// the list during an outage must not flood the log.
	now := time.Now()
	if c.listWarn.Allow("list", now) {
		c.r.log.Warn().Err(err).Msg("route list: the cluster store cannot be read: listing this member's routes only")
	}
	for _, sum := range c.listWarn.Due(now) {
		c.r.log.Warn().Err(err).Uint64("times", sum.Count).Str("over", sum.Over.Round(time.Second).String()).
			Msg("route list: the cluster store cannot be read: listing this member's routes only")
	}
	return c.own(), partialList
}

// page pages the cluster's list, with the reason when it is partial.
func (c *clusterPart) page(after string, limit int) ([]routes.Status, string, string, error) {
	list, partial := c.listPartial()
	page, next, err := routes.Page(list, after, limit)
	return page, next, partial, err
}

// read is every route of the cluster: those this member runs with their
// live status, the others as the store has them, with their holder.
func (c *clusterPart) read(ctx context.Context) ([]routes.Status, error) {
	local := map[string]routes.Status{}
	for _, s := range c.own() {
		local[s.ID] = s
	}
	st, err := c.store()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	defer cancel()
	snap, err := st.Snapshot(ctx)
	if err != nil {
		return nil, storeErr(err)
	}
	reps, now, err := st.Reports(ctx)
	if err != nil {
		return nil, storeErr(err)
	}
	by, age := published(reps, now)
	out := make([]routes.Status, 0, len(snap.Routes))
	for _, rr := range snap.Routes {
		if s, ok := local[rr.ID]; ok {
			// Its own epoch, not the store's: a run under a lease another
			// member has since taken shows as such until it stops.
			s.Origin = routes.Origin(rr.Origin)
			if rr.Owner != c.params.Self || rr.Epoch != s.Epoch {
				s.Detail = fmt.Sprintf("stopping: the store has it held by %s under epoch %d", rr.Owner, rr.Epoch)
			}
			out = append(out, s)
			continue
		}
		s := routes.Status{ID: rr.ID, Origin: routes.Origin(rr.Origin), State: routes.StateWaiting, Epoch: rr.Epoch}
		if err := json.Unmarshal(rr.Spec, &s.Spec); err != nil {
			s.LastError = "definition not understood by this member: " + err.Error()
		}
		if rr.Held(snap.Now) {
			heldElsewhere(&s, rr, by, age)
		} else {
			s.Detail = "not held: waiting for a member to claim it"
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Spec, out[j].Spec
		if a.Dest != b.Dest {
			return a.Dest < b.Dest
		}
		if a.Src != b.Src {
			return a.Src < b.Src
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// reloadConfigured: a member's configured routes are in the cluster's
// store, put there at its start; a reload that changes them is refused
// before it gets here (planReload), so this only says why.
func (c *clusterPart) reloadConfigured(context.Context, []configRoute, []configRoute, []configRoute) error {
	return errors.New("router: reload: a cluster member's configured routes change at its next start")
}
