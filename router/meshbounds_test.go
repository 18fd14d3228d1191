package router

import (
	"fmt"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// The bounds on the duplicates of the mesh tests (docs/multihop.md,
// "How many duplicates"), computed from the windows of the forwarders a
// failure cuts. A forwarder — a route's run, or a transit forwarder on
// one hop — whose connection fails gets back from its source what it
// held unsettled, at most its window, and each of those messages
// crosses once more. A copy made at one hop is copied again at the next
// only when that hop's forwarder loses its own window too, which the sum
// counts; so a failure duplicates at most the sum of the windows of the
// forwarders it cut, plus those of forwarders whose drain after a table
// change did not finish within 10 s (logged).
const (
	meshRouteCredit = 200                  // TestIntegrationMeshMultiHopAndReroute's route's credit
	transitWindow   = routes.DefaultCredit // every transit forwarder's: the routers set none of their own
)

// dupBound is the bound on the duplicates of a failure that cut routes
// whose windows add up to routeWindows and cutTransit transit forwarders,
// with the transit forwarders that did not drain in time since the log
// counts before: late, returned.
func (m *mesh) dupBound(routeWindows, cutTransit int, before map[string]int) (bound, late int) {
	for id, n := range m.lateDrains() {
		late += n - before[id]
	}
	return routeWindows + (cutTransit+late)*transitWindow, late
}

// lateDrains counts, per router, the transit forwarders it cancelled
// because their drain did not finish in time (their windows came back).
func (m *mesh) lateDrains() map[string]int {
	out := map[string]int{}
	for id, l := range m.logs {
		out[id] = strings.Count(l.String(), "transit forwarder did not drain in time")
	}
	return out
}

// carries fails unless router id runs the transit forwarder taking
// broker's transit queue for dest on to via: the forwarder a bound
// counts.
func (m *mesh) carries(id, broker, dest, via string) {
	m.t.Helper()
	brokertest.Eventually(m.t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, f := range m.routers[id].routes.Transit() {
			if f.Broker == broker && f.Dest == dest && f.Via == via && f.State == routes.StateOperational {
				return nil
			}
		}
		return fmt.Errorf("%s does not carry %s's transit for %s via %s: %+v", id, broker, dest, via, m.routers[id].routes.Transit())
	})
}
