package router

import (
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

// A route added through the API may not read the routers' transit queues
// nor write their control exchange (or any other router-owned node), as
// the ingress refuses them; the refusal is a spec error (400) naming the
// field.
func TestAddRouteRefusesRouterOwnedNodes(t *testing.T) {
	cfg, err := config.Parse("r.yaml", []byte("router_id: r1\nbrokers:\n  - {name: a, url: 'amqp://h1', profile: generic}\n  - {name: b, url: 'amqp://h2', profile: generic}\n"+
		"topology: {secret: 0123456789abcdef0123456789abcdef, control_address: ctl}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := New(cfg, zerolog.Nop())
	for _, c := range []struct {
		spec routes.Spec
		want string
	}{
		{routes.Spec{Kind: routes.KindQueue, Src: "a", Dest: "b", Exchange: "amq.direct", Queue: "fedrouter.transit.b"}, `queue "fedrouter.transit.b"`},
		{routes.Spec{Kind: routes.KindExchange, Src: "a", Dest: "b", Exchange: "x", DestExchange: "fedrouter.control"}, `dest_exchange "fedrouter.control"`},
		{routes.Spec{Kind: routes.KindQueue, Src: "a", Dest: "b", Exchange: "ctl", Queue: "q"}, `exchange "ctl"`},
		{routes.Spec{Kind: routes.KindQueue, Src: "a", Dest: "b", Exchange: "x", Queue: "ctl.r2"}, `queue "ctl.r2"`},
	} {
		_, err := r.AddRoute(t.Context(), c.spec)
		var se *routes.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want+" is one of the routers' own nodes") {
			t.Errorf("%s: %v", c.spec, err)
		}
	}
}
