package links

import (
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// engineMsg is a payload with message annotations ma and application
// properties ap (either may be nil).
func engineMsg(t *testing.T, ma, ap wire.Map) []byte {
	t.Helper()
	var b []byte
	var err error
	if ma != nil {
		b = wire.AppendDescriptor(b, wire.DescMessageAnnotations)
		if b, err = wire.AppendValue(b, ma); err != nil {
			t.Fatal(err)
		}
	}
	if ap != nil {
		b = wire.AppendDescriptor(b, wire.DescApplicationProperties)
		if b, err = wire.AppendValue(b, ap); err != nil {
			t.Fatal(err)
		}
	}
	b = wire.AppendDescriptor(b, wire.DescData)
	return wire.AppendBinary(b, []byte("body"))
}

func sym(k string) wire.Symbol { return wire.Symbol(k) }

// rewritten is payload with a copy's set applied, as the copy is sent.
func rewritten(t *testing.T, payload []byte, c engine.Copy) engineMessage {
	t.Helper()
	s, err := wire.ScanSections(payload)
	if err != nil {
		t.Fatal(err)
	}
	out := wire.AppendRewritten(nil, payload, &s, true, c.Set...)
	s2, err := wire.ScanSections(out)
	if err != nil {
		t.Fatal(err)
	}
	return engineMessage{payload: out, s: &s2}
}

// annotationsAfter applies a copy's set to payload and reads the routers'
// annotations back.
func annotationsAfter(t *testing.T, payload []byte, c engine.Copy) map[string]any {
	t.Helper()
	m := rewritten(t, payload, c)
	got := map[string]any{}
	for _, k := range []string{AnnotationOrigin, AnnotationHops, AnnotationTrace, AnnotationDestBroker, AnnotationDestAddress, AnnotationFanned} {
		if v := m.annotation(k); v != nil {
			got[k] = v
		}
	}
	return got
}

// The transit rules on the engine, message by message, read and written
// as bytes (the refusals' words: transit_test.go).
func TestEngineDispatch(t *testing.T) {
	hop := &EngineDispatch{At: "b2", From: "b1", Only: "b3", MaxHops: 4, Control: "fedrouter.control"}
	last := &EngineDispatch{At: "b3", From: "b2", Only: "b3", MaxHops: 4, Control: "fedrouter.control"}
	refused := &IngressCounters{}
	ingress := &EngineDispatch{At: "b1", MaxHops: 4, Control: "fedrouter.control", IngressRefused: refused,
		Ingress: &IngressPolicy{Rules: []IngressRule{{ToBroker: "*", Address: "queue:app*"}}, Control: "fedrouter.control"}}
	header := func(hops any, trace string) wire.Map {
		m := wire.Map{{Key: sym(AnnotationDestBroker), Value: "b3"}, {Key: sym(AnnotationDestAddress), Value: "exchange:ex:k"},
			{Key: sym(AnnotationOrigin), Value: "b0"}}
		if hops != nil {
			m = append(m, wire.Pair{Key: sym(AnnotationHops), Value: hops})
		}
		if trace != "" {
			m = append(m, wire.Pair{Key: sym(AnnotationTrace), Value: trace})
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		d       *EngineDispatch
		payload []byte
		refuse  string // the condition, or "" for a copy
		to      string
		want    map[string]any
	}{
		{"hop counted", hop, engineMsg(t, header(int64(1), "b0"), nil), "", TransitKey("b3"),
			map[string]any{AnnotationOrigin: "b0", AnnotationHops: int64(2), AnnotationTrace: "b0,b1", AnnotationDestBroker: "b3", AnnotationDestAddress: "exchange:ex:k"}},
		{"delivered", last, engineMsg(t, header(uint32(1), "b1"), nil), "", "exchange:ex:k",
			map[string]any{AnnotationTrace: "b1,b2", AnnotationDestBroker: "b3", AnnotationDestAddress: "exchange:ex:k"}},
		{"max hops", hop, engineMsg(t, header(int64(4), ""), nil), CondMaxHops, "", nil},
		{"negative hops", hop, engineMsg(t, header(int64(-1), ""), nil), CondInvalidField, "", nil},
		{"hops not an integer", hop, engineMsg(t, header("2", ""), nil), CondInvalidField, "", nil},
		{"long origin", hop, engineMsg(t, wire.Map{{Key: sym(AnnotationOrigin), Value: strings.Repeat("x", MaxAnnotationLen+1)}}, nil), CondInvalidField, "", nil},
		{"symbol broker", hop, engineMsg(t, wire.Map{{Key: sym(AnnotationDestBroker), Value: sym("b3")}}, nil), CondInvalidField, "", nil},
		{"no destination", hop, engineMsg(t, nil, nil), CondBadRequest, "", nil},
		{"other destination", hop, engineMsg(t, wire.Map{{Key: sym(AnnotationDestBroker), Value: "b9"}, {Key: sym(AnnotationDestAddress), Value: "queue:q"}}, nil), CondBadRequest, "", nil},
		{"router-owned address", last, engineMsg(t, wire.Map{{Key: sym(AnnotationDestBroker), Value: "b3"}, {Key: sym(AnnotationDestAddress), Value: "exchange:fedrouter.control"}}, nil), CondUnauthorized, "", nil},
		{"from application properties", hop, engineMsg(t, nil, wire.Map{{Key: PropDestBroker, Value: "b3"}, {Key: PropDestAddress, Value: "queue:q"}}), "", TransitKey("b3"),
			map[string]any{AnnotationOrigin: "b2", AnnotationHops: int64(1), AnnotationTrace: "b1", AnnotationDestBroker: "b3", AnnotationDestAddress: "queue:q"}},
		{"ingress: a new journey", ingress, engineMsg(t, wire.Map{{Key: sym(AnnotationOrigin), Value: "claimed"}, {Key: sym(AnnotationFanned), Value: "g"},
			{Key: sym(AnnotationHops), Value: int64(9)}, {Key: sym(AnnotationTrace), Value: "x"}}, wire.Map{{Key: PropDestBroker, Value: "b3"}, {Key: PropDestAddress, Value: "queue:app"}}), "", TransitKey("b3"),
			map[string]any{AnnotationOrigin: "b1", AnnotationHops: int64(0), AnnotationDestBroker: "b3", AnnotationDestAddress: "queue:app"}},
		{"ingress: not allowed", ingress, engineMsg(t, nil, wire.Map{{Key: PropDestBroker, Value: "b3"}, {Key: PropDestAddress, Value: "queue:secret"}}), CondUnauthorized, "", nil},
		{"ingress: router-owned", ingress, engineMsg(t, nil, wire.Map{{Key: PropDestBroker, Value: "b3"}, {Key: PropDestAddress, Value: "queue:fedrouter.transit.b3"}}), CondUnauthorized, "", nil},
		{"bad property", hop, engineMsg(t, header(nil, ""), wire.Map{{Key: PropDestAddress, Value: int64(3)}}), CondInvalidField, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := wire.ScanSections(tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			var c engine.Choice
			tc.d.Dispatch(tc.payload, &s, &c)
			if tc.refuse != "" {
				if c.Refuse == nil || c.Refuse.Condition != tc.refuse || len(c.Copies) != 0 {
					t.Fatalf("want refused %s, got %+v", tc.refuse, c)
				}
				return
			}
			if c.Refuse != nil || len(c.Copies) != 1 || c.Copies[0].To != tc.to {
				t.Fatalf("want one copy to %s, got %+v %v", tc.to, c.Copies, c.Refuse)
			}
			got := annotationsAfter(t, tc.payload, c.Copies[0])
			if len(got) != len(tc.want) {
				t.Fatalf("annotations %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("%s: %v (%T), want %v (%T)", k, got[k], got[k], v, v)
				}
			}
		})
	}
}

// A route's message entering transit on the engine gets EnterTransit's
// annotations (a new journey: hops 0, no trace; an origin kept), to the
// forwarder's own destination; one with a bad fan-out mark is refused.
func TestEngineEnterTransit(t *testing.T) {
	enter := EngineEnterTransit("b1", "b3", amqp.Node{Kind: amqp.Exchange, Name: "ex"}, nil)
	p := engineMsg(t, wire.Map{{Key: sym(AnnotationHops), Value: int64(7)}, {Key: sym(AnnotationTrace), Value: "x,y"}, {Key: sym(AnnotationOrigin), Value: "b0"}}, nil)
	s, _ := wire.ScanSections(p)
	var c engine.Choice
	enter(p, &s, &c)
	if c.Refuse != nil || len(c.Copies) != 1 || c.Copies[0].To != "" {
		t.Fatalf("%+v", c)
	}
	got := annotationsAfter(t, p, c.Copies[0])
	want := map[string]any{AnnotationOrigin: "b0", AnnotationHops: int64(0), AnnotationDestBroker: "b3", AnnotationDestAddress: "exchange:ex"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %v, want %v", k, got[k], v)
		}
	}
	bad := engineMsg(t, wire.Map{{Key: sym(AnnotationFanned), Value: int64(1)}}, nil)
	s, _ = wire.ScanSections(bad)
	c = engine.Choice{}
	enter(bad, &s, &c)
	if c.Refuse == nil || c.Refuse.Condition != CondInvalidField {
		t.Fatalf("%+v", c)
	}
}

// The ingress's refusals are counted by reason, as on go-amqp.
func TestEngineDispatchIngressCounts(t *testing.T) {
	refused := &IngressCounters{}
	d := &EngineDispatch{At: "b1", MaxHops: 4, IngressRefused: refused, Ingress: &IngressPolicy{Rules: []IngressRule{{ToBroker: "*", Address: "queue:app*"}}}}
	for _, addr := range []string{"queue:secret", "queue:fedrouter.transit.b3", "queue:app1"} {
		p := engineMsg(t, nil, wire.Map{{Key: PropDestBroker, Value: "b3"}, {Key: PropDestAddress, Value: addr}})
		s, _ := wire.ScanSections(p)
		var c engine.Choice
		d.Dispatch(p, &s, &c)
	}
	if refused.NotAllowed.Load() != 1 || refused.RouterOwned.Load() != 1 {
		t.Fatalf("not allowed %d, router-owned %d", refused.NotAllowed.Load(), refused.RouterOwned.Load())
	}
}
