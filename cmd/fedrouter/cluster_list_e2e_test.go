package main

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// In a cluster, route list on one member shows a route another member
// holds as held there, with that member's state and counters (published
// with its beats), not as a route waiting with nothing forwarded.
func TestClusterRouteListShowsTheHoldersStatus(t *testing.T) {
	const n = 300
	c := newClusterRig(t, []string{"la", "lb"}, 4, 100)
	c.spread(3)
	c.send(0, n)
	c.collect(n)
	for id, p := range c.members {
		var elsewhere routes.Status
		brokertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
			sts, err := p.api().Routes(context.Background())
			if err != nil {
				return err
			}
			if len(sts) != len(c.srcs) {
				return fmt.Errorf("%s lists %d routes, want %d", id, len(sts), len(c.srcs))
			}
			others := 0
			for _, st := range sts {
				if st.Holder == id {
					continue
				}
				others++
				elsewhere = st
				if st.State != routes.StateOperational || st.Forwarded != n || st.InFlight != 0 {
					return fmt.Errorf("%s lists %s, held by %s, as %s with %d forwarded, %d in flight; want Operational, %d, 0 (%s)",
						id, st.ID, st.Holder, st.State, st.Forwarded, st.InFlight, n, st.Detail)
				}
			}
			if others == 0 {
				return fmt.Errorf("%s holds every route", id)
			}
			return nil
		})
		out, code := p.cli("route", "list")
		row := regexp.MustCompile(`(?m)^` + elsewhere.ID + `\s.*\sOperational\s+` + fmt.Sprint(n) + `\s+0\s+held by ` + elsewhere.Holder + ` \(as of [0-9.]+m?s ago\)`)
		if code != 0 || !row.MatchString(out) {
			t.Fatalf("route list on %s: exit %d; want %s held by %s, Operational, %d forwarded:\n%s", id, code, elsewhere.ID, elsewhere.Holder, n, out)
		}
	}
}
