package console_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/cluster"
	"github.com/fedrouter/fedrouter/console"
	"github.com/fedrouter/fedrouter/globaldest"
	"github.com/fedrouter/fedrouter/router/routertest"
	"github.com/fedrouter/fedrouter/routes"
)

// member is the fake router as a cluster member holding its routes, with
// global destinations: the views only some routers serve.
type member struct {
	*routertest.Service
}

func (m member) Routes() []routes.Status { return held(m.Service.Routes()) }

// RoutesPage is what GET /api/v1/routes answers from: the same holders.
func (m member) RoutesPage(after string, limit int) ([]routes.Status, string, string, error) {
	out, next, partial, err := m.Service.RoutesPage(after, limit)
	return held(out), next, partial, err
}

// held marks the route to tokyo held by paris-2, the others by paris-1.
func held(out []routes.Status) []routes.Status {
	for i := range out {
		out[i].Holder = "paris-1"
		if out[i].Spec.Dest == "tokyo" {
			out[i].Holder = "paris-2"
		}
	}
	return out
}

func (m member) Cluster(context.Context) (api.ClusterStatus, error) {
	beat := time.Now().Add(-400 * time.Millisecond)
	return api.ClusterStatus{Name: "paris", Self: "paris-1", Heartbeat: "1s", Lease: "10s", ReadAt: time.Now(), Joined: true,
		Members: []api.MemberStatus{
			{ID: "paris-1", State: string(cluster.Alive), LastBeat: beat, BeatAgo: "400ms", Brokers: []string{"paris", "london"}, Routes: 1},
			{ID: "paris-2", State: string(cluster.Suspect), LastBeat: beat, BeatAgo: "3.2s", Brokers: []string{"paris", "london"}, Routes: 1},
		}}, nil
}

func (m member) GlobalDestinations(context.Context) (api.Destinations, error) {
	return api.Destinations{Destinations: []globaldest.Status{{
		Name: "invoices", Entry: "invoices", Kind: "queue", State: "global", Properties: "durable", Origin: "paris",
		Instances: []globaldest.Instance{
			{Broker: "paris", State: "present", Messages: 1500, Consumers: 0},
			{Broker: "london", State: "present", Messages: 0, Consumers: 2},
		},
		Flows: []globaldest.Flow{{From: "paris", To: "london", Since: time.Now().Add(-time.Minute), Route: "abc", State: "Operational", Moved: 420}},
	}}, Unlisted: map[string]string{"tokyo": "not attached"}}, nil
}

// A cluster member's console lists the members with the routes each
// holds, and the global destinations with their instances and flows.
func TestBrowserClusterAndDestinations(t *testing.T) {
	p := open(t, serve(t, member{fake(t)})+console.Prefix)
	p.Login(token)
	p.Poll(10*time.Second, "members and destinations drawn", func() error {
		members, err := p.Attrs("#cluster [data-member]", "data-member", "data-state")
		if err != nil {
			return err
		}
		instances, err := p.Attrs(`[data-destination="invoices"] [data-instance]`, "data-instance", "data-state")
		if err != nil {
			return err
		}
		flows, err := p.Attrs(`[data-destination="invoices"] [data-flow]`, "data-flow", "data-state")
		if err != nil {
			return err
		}
		if fmt.Sprint(members) != "map[paris-1:alive paris-2:suspect]" || fmt.Sprint(instances) != "map[london:present paris:present]" ||
			fmt.Sprint(flows) != "map[paris|london:Operational]" {
			return fmt.Errorf("members %v, instances %v, flows %v", members, instances, flows)
		}
		return nil
	})
	var held map[string]string
	p.Eval(`Object.fromEntries([...document.querySelectorAll("#cluster [data-member]")].map((r) => [r.dataset.member, r.cells[5].textContent]))`, &held)
	if !strings.Contains(held["paris-1"], "paris → london") || !strings.Contains(held["paris-2"], "paris → tokyo") || strings.Contains(held["paris-1"], "tokyo") {
		t.Errorf("routes held by member: %v", held)
	}
	text := textOf(p, "dest-panel")
	for _, want := range []string{"invoices", "1,500", "moved 420", "tokyo (not attached)"} {
		if !strings.Contains(text, want) {
			t.Errorf("destinations panel lacks %q:\n%s", want, text)
		}
	}
	t.Logf("screenshot: %s", p.Screenshot("console-cluster.png"))
}

// storeDown is the member while its cluster store cannot be read, until
// healed: the routes list is its own only, and says so.
type storeDown struct {
	member
	healed *atomic.Bool
}

// partialText is what router's RoutesPage says of a member's own list.
const partialText = "the cluster store cannot be read: this member's routes only are listed"

func (m storeDown) RoutesPage(after string, limit int) ([]routes.Status, string, string, error) {
	out, next, partial, err := m.member.RoutesPage(after, limit)
	if m.healed.Load() {
		return out, next, partial, err
	}
	own := out[:0]
	for _, st := range out {
		if st.Holder == "paris-1" {
			own = append(own, st)
		}
	}
	return own, next, partialText, err
}

// A partial route list (a member whose store cannot be read lists its own
// routes only) is marked as such, as a warning above the table, until the
// whole list is back.
func TestBrowserPartialRouteList(t *testing.T) {
	healed := &atomic.Bool{}
	p := open(t, serve(t, storeDown{member{fake(t)}, healed})+console.Prefix)
	p.Login(token)
	var note struct {
		Text string
		Warn bool
		Rows int
	}
	read := func() {
		p.Eval(`(() => { const n = document.getElementById("routes-note");
			return { Text: n.innerText, Warn: n.classList.contains("warn") && getComputedStyle(n).display !== "none",
				Rows: document.querySelectorAll("#routes [data-route]").length }; })()`, &note)
	}
	p.Poll(10*time.Second, "the partial list's note", func() error {
		read()
		if !note.Warn || note.Text != "Partial list: "+partialText+"." || note.Rows != 1 {
			return fmt.Errorf("note %+v", note)
		}
		return nil
	})
	t.Logf("screenshot: %s", p.Screenshot("console-partial.png"))
	healed.Store(true)
	p.Poll(10*time.Second, "the note gone with the whole list", func() error {
		read()
		if note.Warn || note.Text != "" || note.Rows != 2 {
			return fmt.Errorf("note %+v", note)
		}
		return nil
	})
}
