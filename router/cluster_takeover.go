package router

import (
	"errors"

	"github.com/fedrouter/fedrouter/cluster"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/store"
)

// ErrTakeover: a change names a route that another cluster member is
// taking over (its holder is suspect or failed); it can be made again
// once the takeover is over. The admin API answers 503 with Retry-After.
var ErrTakeover = errors.New("router: a cluster takeover is under way")

// TakeoverError is ErrTakeover for one route, with when to retry.
type TakeoverError struct{ cluster.Takeover }

func (e *TakeoverError) Error() string        { return "router: " + e.Takeover.String() }
func (e *TakeoverError) Is(target error) bool { return target == ErrTakeover }

// refuseTakeovers returns a TakeoverError for the first route of snap
// that pick names and that is being taken over at the store's time: a
// change to it is refused as a whole, before anything is written.
func (c *clusterPart) refuseTakeovers(snap store.Snapshot, pick func(store.RouteRow) bool) error {
	for _, rr := range snap.Routes {
		if !pick(rr) {
			continue
		}
		if t, ok := c.params.InTakeover(rr, snap.Members, snap.Now); ok {
			return &TakeoverError{t}
		}
	}
	return nil
}

// runtimeRoute says whether rr is a runtime route (one the API may delete).
func runtimeRoute(rr store.RouteRow) bool { return rr.Origin == string(routes.OriginRuntime) }
