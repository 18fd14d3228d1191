// Package store is what the members of a router cluster share: the route
// definitions, who holds each route (a lease with an epoch, the fencing
// token) and the members' heartbeats. It speaks its own vocabulary — a
// route definition is an id and opaque JSON — so that the routes package
// and the store do not know each other; the router translates
// (router/cluster.go, cluster_routes.go), and the cluster package's core
// decides on the store's rows without reading a spec.
//
// The one implementation is PostgreSQL (store/pgstore); the interface is
// small so that another (etcd, say) could follow. Every time compared here
// is the store's clock: members' clocks are never compared with each other.
package store

import (
	"context"
	"errors"
	"time"
)

// Store is a cluster's shared state. Every call is one short round trip
// (at most one transaction); none blocks on another member's work for
// longer than a row lock held by a single statement.
type Store interface {
	// Beat records member's heartbeat (inserting or updating its row, a
	// member that left joins again) and renews every lease it holds with an
	// epoch it names in held, for lease more — even one that expired, as
	// long as nobody took it; in the same transaction. It returns the
	// leases still held (a lease missing from the answer was lost: taken
	// over) and the store's time of the beat. A row of another incarnation
	// that beat less than a lease ago is not taken: ErrSuperseded, nothing
	// renewed (two processes with one router_id never both hold a lease).
	Beat(ctx context.Context, m Member, held []Lease, lease time.Duration) (Renewal, error)
	// Snapshot reads the members, the route definitions and their leases;
	// not the members' published statuses (MemberRow.Routes is nil):
	// every member reads a snapshot with every beat, and the statuses of
	// thousands of routes are megabytes that only a route list needs.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Reports reads each member's last published statuses
	// (Member.Routes), with the store's time of that publication and
	// the store's time now.
	Reports(ctx context.Context) ([]Report, time.Time, error)
	// Claim takes the routes ids whose lease is free or expired, for lease:
	// epoch + 1, first wins. It returns the leases won (a subset of ids).
	Claim(ctx context.Context, member string, ids []string, lease time.Duration) ([]Lease, error)
	// Release gives the leases back (a handoff or a leave): only those
	// still held by member with the same epoch; it returns how many.
	Release(ctx context.Context, member string, leases []Lease) (int, error)
	// Leave marks member as gone on purpose (SIGTERM), after its releases.
	Leave(ctx context.Context, member string) error
	// PutRoute adds a route definition with a free lease; an existing id is
	// left as it is and reported as not created.
	PutRoute(ctx context.Context, r RouteDef) (created bool, err error)
	// DeleteRoute removes a definition and its lease; ErrNotFound if absent.
	DeleteRoute(ctx context.Context, id string) error
	// DeleteRoutes removes the definitions ids and their leases in one
	// statement (a flush of thousands is one round trip, all or none) and
	// returns how many there were; ids already absent are no error.
	DeleteRoutes(ctx context.Context, ids []string) (int, error)
	// Close releases the connections; the data stay.
	Close()
}

// Member is one router of the cluster as it describes itself.
type Member struct {
	ID string
	// Incarnation is the process's boot id: a restarted member is a new
	// incarnation, so the others can tell a restart from a late beat.
	Incarnation string
	AdminURL    string   // where CLI and API clients are redirected
	Brokers     []string // the brokers this member is attached to
	Local       []string // the brokers near it (placement prefers it for them)
	// Routes are the statuses of the routes the member runs, published
	// with a beat so that any member can list them as their holder sees
	// them: JSON the store keeps without reading (the router's, bounded
	// there). nil: what the member published last stands (a member
	// publishes when its routes' states change, and now and then for
	// their counters, not with every beat).
	Routes []byte
}

// Report is what one member last published of its routes' statuses.
type Report struct {
	Member string
	At     time.Time // the store's time of the beat that carried it
	Routes []byte
}

// MemberRow is a member as the store has it.
type MemberRow struct {
	Member
	LastBeat time.Time // the store's time of its last heartbeat
	Left     bool      // it left on purpose (and has not beaten since)
}

// Lease is one route's ownership: Epoch grows by one at every claim, and
// every act as holder carries it.
type Lease struct {
	Route string
	Epoch int64
	Until time.Time // the store's time at which it expires
}

// RouteDef is a route's definition: its id and its spec as JSON, which the
// store keeps without reading.
type RouteDef struct {
	ID     string
	Spec   []byte
	Origin string // "config" or "runtime": who added it
}

// RouteRow is a definition with its lease.
type RouteRow struct {
	RouteDef
	Owner string // "" when free
	Epoch int64
	Until time.Time
}

// Held says whether the route's lease is held at the store's time now.
func (r RouteRow) Held(now time.Time) bool { return r.Owner != "" && r.Until.After(now) }

// Renewal is a heartbeat's answer.
type Renewal struct {
	Now  time.Time // the store's time of the beat
	Held []Lease   // the leases still held, renewed
}

// Snapshot is the whole shared state at the store's time Now.
type Snapshot struct {
	Now     time.Time
	Members []MemberRow
	Routes  []RouteRow
}

// Errors of the store layer; wrapped with %w by implementations.
var (
	// ErrUnavailable: the store cannot be reached or failed mid-call; the
	// call may or may not have taken effect (read again before acting).
	ErrUnavailable = errors.New("store: unavailable")
	// ErrAuth: the store refused the credentials; retrying will not help.
	ErrAuth = errors.New("store: authentication failed")
	// ErrSchemaNewer: the store was migrated by a newer fedrouter.
	ErrSchemaNewer = errors.New("store: schema is newer than this fedrouter")
	// ErrNotFound: no such route definition.
	ErrNotFound = errors.New("store: not found")
	// ErrSuperseded: another process beats as the same member (same id,
	// another incarnation) and its last beat is younger than a lease. The
	// beat renewed nothing: this process holds no lease.
	ErrSuperseded = errors.New("store: another live process is this member")
	// ErrConfig: the store's URL or settings are wrong.
	ErrConfig = errors.New("store: bad configuration")
)
