package router

import (
	"context"
	"errors"

	"github.com/fedrouter/fedrouter/routes"
)

// routeControl is how the router changes and lists its routes: one
// interface, two implementations chosen once at Start — a single router's
// (localRoutes: the route manager, with its state file and journal) and a
// cluster member's (*clusterPart: definitions in the cluster's PostgreSQL
// store, each run by the member holding its lease). The admin API's route
// calls and a reload's (reloadConfigured) go through it; the console
// reaches it through the admin API.
type routeControl interface {
	// add adds a runtime route; durable before it runs.
	add(ctx context.Context, spec routes.Spec) (routes.Status, error)
	// deleteSpec deletes the route with spec's identity.
	deleteSpec(ctx context.Context, spec routes.Spec) error
	// deleteID deletes the route with id.
	deleteID(ctx context.Context, id string) error
	// flush deletes the runtime routes (to dest, if not "").
	flush(ctx context.Context, dest string) (int, error)
	// list is every route: a cluster's lists the whole cluster's.
	list() []routes.Status
	// page is a page of list (routes.Page), and why the list is partial
	// when it is ("" when whole: a cluster member whose store cannot be
	// read lists its own routes only).
	page(after string, limit int) (page []routes.Status, next, partial string, err error)
	// own is the routes this process runs.
	own() []routes.Status
	// reloadConfigured applies a reload's configured routes: stops
	// remove's, stops and starts again replace's (with their new
	// settings), starts add's. Runtime routes are not touched.
	reloadConfigured(ctx context.Context, remove, replace, add []configRoute) error
}

// localRoutes is a single router's route control: its manager, whose
// runtime routes are kept in the state file.
type localRoutes struct{ m *routes.Manager }

func (l localRoutes) add(ctx context.Context, spec routes.Spec) (routes.Status, error) {
	return l.m.Add(ctx, spec)
}
func (l localRoutes) deleteSpec(ctx context.Context, spec routes.Spec) error {
	return l.m.DeleteSpec(ctx, spec)
}
func (l localRoutes) deleteID(ctx context.Context, id string) error { return l.m.Delete(ctx, id) }
func (l localRoutes) flush(ctx context.Context, dest string) (int, error) {
	return l.m.Flush(ctx, dest)
}
func (l localRoutes) list() []routes.Status { return l.m.List() }
func (l localRoutes) page(after string, limit int) ([]routes.Status, string, string, error) {
	page, next, err := l.m.ListPage(after, limit) // only the page's statuses computed
	return page, next, "", err
}
func (l localRoutes) own() []routes.Status { return l.m.List() }

// reloadConfigured: an exchange route replaced keeps its subscription
// (the new one, same id, goes on from it); one removed drops it, as a
// deleted route does. Every step is tried; the errors are joined.
func (l localRoutes) reloadConfigured(ctx context.Context, remove, replace, add []configRoute) error {
	var errs []error
	for _, r := range remove {
		errs = append(errs, l.m.StopConfigured(ctx, r.id, routes.DropSubscription))
	}
	for _, r := range replace {
		if err := l.m.StopConfigured(ctx, r.id, routes.KeepSubscription); err != nil {
			errs = append(errs, err)
			continue
		}
		_, err := l.m.Start(r.spec, routes.OriginConfig)
		errs = append(errs, err)
	}
	for _, r := range add {
		_, err := l.m.Start(r.spec, routes.OriginConfig)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

var (
	_ routeControl = localRoutes{}
	_ routeControl = (*clusterPart)(nil)
)
