package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/console"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/router/routertest"
	"github.com/fedrouter/fedrouter/routes"
)

// A Stalled route is drawn with an amber badge (warn, as Waiting), and
// what it is stuck on under it.
func TestBrowserStalledRoute(t *testing.T) {
	why := "the source holds 99 messages and none arrives (1000 credit granted); nothing forwarded for 1m0s"
	svc := routertest.New(routertest.Options{RouterID: "paris-1", Known: []string{"paris", "london"},
		NotClustered: router.ErrNotClustered, NoDestinations: router.ErrNoDestinations,
		Added: routes.Status{State: routes.StateStalled, Detail: why, Since: time.Now().Add(-time.Minute)},
		Brokers: []amqp.Status{
			{Broker: "london", State: amqp.Operational, Since: time.Now(), URL: "amqp://london:5672", Generation: 1},
			{Broker: "paris", State: amqp.Operational, Since: time.Now(), URL: "amqp://paris:5672", Generation: 1},
		}})
	svc.SetTopology(network(true))
	st, err := svc.AddRoute(context.Background(), routes.Spec{Kind: routes.KindQueue, Src: "paris", Dest: "london", Exchange: "amq.direct", Queue: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	p := open(t, serve(t, svc)+console.Prefix)
	p.Login(token)
	p.Poll(10*time.Second, "the route drawn Stalled", func() error {
		var row struct{ State, Class, Badge, Text string }
		p.Eval(fmt.Sprintf(`(() => { const r = document.querySelector('#routes [data-route=%q]');
			if (!r) return {};
			const b = r.querySelector('.badge');
			return {State: r.dataset.state, Class: r.className, Badge: b ? b.className + ' ' + b.textContent : '', Text: r.innerText}; })()`, st.ID), &row)
		if row.State != "Stalled" || !strings.Contains(row.Class, "state-warn") || row.Badge != "badge warn Stalled" || !strings.Contains(row.Text, why) {
			return fmt.Errorf("route row %+v", row)
		}
		return nil
	})
}
