package router

import (
	"context"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// Service is what the admin API serves: the router's routes, links and
// broker connections. *Router implements it; tests may fake it.
//
// Errors: routes.ErrDuplicate (the route exists: nothing changed),
// routes.ErrNotFound, routes.ErrConfigRoute (a configured route cannot be
// deleted at runtime), routes.ErrUnknownBroker (wrapped, naming the broker),
// *routes.SpecError (bad request), routes.ErrStopped; a cluster member's
// ErrTakeover and ErrStoreUnavailable; ErrTopologyOff, ErrNotClustered and
// ErrNoDestinations for a view the router does not have. The admin API
// answers each with its status and code (admin_errors.go).
type Service interface {
	// AddRoute adds a route. spec.Src and spec.Dest name a configured broker
	// by name or as [user/pass@]host[:port]; they are resolved to names.
	// Durable routes are written to the state file before AddRoute returns.
	AddRoute(ctx context.Context, spec routes.Spec) (routes.Status, error)
	// DeleteRoute deletes the route with spec's identity (kind, dest, src,
	// exchange, queue or key); brokers are resolved as in AddRoute.
	DeleteRoute(ctx context.Context, spec routes.Spec) error
	// DeleteRouteID deletes the route with that ID.
	DeleteRouteID(ctx context.Context, id string) error
	// FlushRoutes deletes every runtime route (to dest only, if not "")
	// and returns how many it deleted; configured routes stay.
	FlushRoutes(ctx context.Context, dest string) (int, error)
	// Routes lists the routes, sorted by dest, src, exchange.
	Routes() []routes.Status
	// RoutesPage is a page of Routes: at most limit routes after the
	// cursor after ("" from the first), the next page's cursor (""
	// after the last), and why the list is partial when it is (a cluster
	// member whose store cannot be read lists its own routes only; ""
	// when whole); a cursor it did not hand out is an error.
	RoutesPage(after string, limit int) (page []routes.Status, next, partial string, err error)
	// OwnRoutes lists the routes this process runs: Routes for a single
	// router, its own share for a cluster member (/metrics exports these).
	OwnRoutes() []routes.Status
	// Links lists the links (broker pairs that routes run over).
	Links() []routes.LinkStatus
	// AddLink adds a link between two of the router's brokers, both ways,
	// advertised in its link state (qpid-route's link add; links.go):
	// ErrLinkDuplicate when it has it, ErrTopologyOff without flooding.
	AddLink(ctx context.Context, l api.Link) error
	// DeleteLink deletes a link AddLink added: ErrNoLink when
	// there is none, ErrLinkConfigured for one of links: in the file.
	DeleteLink(ctx context.Context, l api.Link) error
	// Brokers lists the broker connections.
	Brokers() []amqp.Status
	// RouterID names this router.
	RouterID() string
	// Topology returns the link-state view; ErrTopologyOff when the
	// router floods no link state.
	Topology(ctx context.Context) (topology.Snapshot, error)
	// Cluster is the cluster as this member sees it; ErrNotClustered for
	// a single router.
	Cluster(ctx context.Context) (api.ClusterStatus, error)
	// Reload reads the configuration file again and applies it, saying
	// what changed (reload.go); *ReloadError when it is refused whole
	// (invalid, a setting that cannot change live, another reload in
	// progress): nothing changed then.
	Reload(ctx context.Context) (api.Reload, error)
	// GlobalDestinations returns the global destinations as last
	// decided; ErrNoDestinations when the router has none configured.
	GlobalDestinations(ctx context.Context) (api.Destinations, error)
}
