package links

import (
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/amqp"
)

func TestGlob(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "exchange:orders:eu", true},
		{"exchange:orders", "exchange:orders", true},
		{"exchange:orders", "exchange:orders:eu", false},
		{"exchange:orders*", "exchange:orders:eu", true},
		{"exchange:orders:*", "exchange:orders", false},
		{"exchange:orders:*", "exchange:orders:", true},
		{"queue:q?", "queue:q1", true},
		{"queue:q?", "queue:q12", false},
		{"*.eu", "orders.eu", true},
		{"*.eu", "orders.eu.de", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"*", "*x", true},
		{"rabbit?", "rabbit4", true},
		{"", "", true},
		{"", "x", false},
		{"**", "anything", true},
	}
	for _, c := range cases {
		if got := Glob(c.pattern, c.s); got != c.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
	// Bounded work on a pattern built to backtrack.
	long := strings.Repeat("a", 4096)
	if Glob(strings.Repeat("*a", 64)+"b", long) {
		t.Error("matched a pattern needing a b")
	}
}

func TestIngressPolicy(t *testing.T) {
	p := &IngressPolicy{Control: "meshctl", Rules: []IngressRule{
		{ToBroker: "rabbit4", Address: "exchange:orders*"},
		{ToBroker: "*", Address: "queue:*"},
	}}
	cases := []struct {
		dest, addr, reason, why string
	}{
		{"rabbit4", "exchange:orders:eu", "", ""},
		{"rabbit2", "queue:work", "", ""},
		{"rabbit2", "exchange:orders", RefusedNotAllowed, "exchange:orders on rabbit2 matches no ingress.allow rule"},
		{"rabbit4", "queue:fedrouter.transit.rabbit1", RefusedRouterOwned, "queue:fedrouter.transit.rabbit1 on rabbit4 is one of the routers' own addresses"},
		{"rabbit4", "queue:fedrouter.dead-letter", RefusedRouterOwned, "routers' own"},
		{"rabbit4", "queue:fedrouter.ingress", RefusedRouterOwned, "routers' own"},
		{"rabbit4", "queue:meshctl.mA", RefusedRouterOwned, "meshctl"},
		{"rabbit4", "exchange:meshctl", RefusedRouterOwned, "whatever ingress.allow says"},
		{"rabbit4", "queue:meshctlx", "", ""},
	}
	for _, c := range cases {
		node, err := amqp.ParseAddress(c.addr)
		if err != nil {
			t.Fatal(err)
		}
		reason, why := p.Check(c.dest, node)
		if reason != c.reason || !strings.Contains(why, c.why) {
			t.Errorf("Check(%s, %s) = %s %q, want %s containing %q", c.dest, c.addr, reason, why, c.reason, c.why)
		}
	}
	if reason, _ := (&IngressPolicy{}).Check("b", amqp.Node{Kind: amqp.Queue, Name: "q"}); reason != RefusedNotAllowed {
		t.Errorf("no rules: %s, want %s", reason, RefusedNotAllowed)
	}
}

// An application's request through an ingress with rules is refused,
// before any I/O, for one of the routers' own addresses — whatever the
// rules say, and whatever routers' annotations it forged — and for what
// no rule allows; each refusal is counted by reason (issue 17, finding 1).
func TestDispatchIngressRefuses(t *testing.T) {
	var c IngressCounters
	in := &EngineDispatch{At: "a", MaxHops: 3, Control: "ctl", IngressRefused: &c,
		Ingress: &IngressPolicy{Control: "ctl", Rules: []IngressRule{{ToBroker: "*", Address: "*"}, {ToBroker: "d", Address: "exchange:ok"}}}}
	req := func(dest, addr string) []byte {
		return encoded(t, nil, map[string]any{PropDestBroker: dest, PropDestAddress: addr})
	}
	for _, msg := range [][]byte{
		req("d", "queue:fedrouter.transit.e"),
		req("a", "queue:fedrouter.dead-letter"),
		req("d", "exchange:ctl"),
		req("d", "queue:ctl.r1"),
		// Forged annotations win over the properties when read: the
		// ingress judges what it would act on.
		encoded(t, map[string]any{AnnotationDestBroker: "d", AnnotationDestAddress: "queue:fedrouter.transit.x", AnnotationHops: int64(0)},
			map[string]any{PropDestBroker: "d", PropDestAddress: "exchange:ok"}),
	} {
		cond, why := refusedWith(t, in, msg)
		if cond != CondUnauthorized || !strings.Contains(why, "routers' own addresses") {
			t.Errorf("refused with %s %q", cond, why)
		}
	}
	narrow := &EngineDispatch{At: "a", MaxHops: 3, IngressRefused: &c, Ingress: &IngressPolicy{Rules: []IngressRule{{ToBroker: "d", Address: "exchange:ok"}}}}
	for _, msg := range [][]byte{req("d", "exchange:other"), req("e", "exchange:ok"), req("d", "queue:ok")} {
		cond, why := refusedWith(t, narrow, msg)
		if cond != CondUnauthorized || !strings.Contains(why, "matches no ingress.allow rule") {
			t.Errorf("refused with %s %q", cond, why)
		}
	}
	if c.RouterOwned.Load() != 5 || c.NotAllowed.Load() != 3 {
		t.Errorf("counted router_owned %d, not_allowed %d; want 5 and 3", c.RouterOwned.Load(), c.NotAllowed.Load())
	}
}

// A message in transit is never delivered into one of the routers' own
// addresses, wherever it came from: a hop's last step refuses it.
func TestDispatchRefusesRouterOwnedDelivery(t *testing.T) {
	hop := &EngineDispatch{At: "d", From: "b", Only: "d", MaxHops: 3, Control: "ctl"}
	for _, addr := range []string{"queue:fedrouter.transit.e", "exchange:ctl", "queue:ctl.r2", "queue:fedrouter.ingress"} {
		cond, why := refusedWith(t, hop, encoded(t, map[string]any{AnnotationDestBroker: "d", AnnotationDestAddress: addr}, nil))
		if cond != CondUnauthorized || !strings.Contains(why, addr+" on d is one of the routers' own addresses") {
			t.Errorf("%s: refused with %s %q", addr, cond, why)
		}
	}
}
