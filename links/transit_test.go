package links

import (
	"slices"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// refusedWith dispatches one message that must be refused, and returns
// the condition and reason.
func refusedWith(t *testing.T, d *EngineDispatch, payload []byte) (string, string) {
	t.Helper()
	s, err := wire.ScanSections(payload)
	if err != nil {
		t.Fatal(err)
	}
	var c engine.Choice
	d.Dispatch(payload, &s, &c)
	if c.Refuse == nil || len(c.Copies) != 0 {
		t.Fatalf("dispatched %+v: want refused", c)
	}
	return c.Refuse.Condition, c.Refuse.Description
}

// encoded is a message with these annotations (symbol keys) and
// application properties (string keys), keys in order.
func encoded(t *testing.T, ann, props map[string]any) []byte {
	t.Helper()
	var ma, ap wire.Map
	for _, k := range sortedKeys(ann) {
		ma = append(ma, wire.Pair{Key: sym(k), Value: ann[k]})
	}
	for _, k := range sortedKeys(props) {
		ap = append(ap, wire.Pair{Key: k, Value: props[k]})
	}
	return engineMsg(t, ma, ap)
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// header reads payload's transit header as a transit forwarder does.
func header(t *testing.T, payload []byte) (TransitHeader, error) {
	t.Helper()
	s, err := wire.ScanSections(payload)
	if err != nil {
		t.Fatal(err)
	}
	return readTransit(engineMessage{payload: payload, s: &s})
}

func TestDispatchRefusesBadRequests(t *testing.T) {
	hop := &EngineDispatch{At: "b", From: "a", Only: "d", MaxHops: 3}
	cases := []struct {
		name       string
		ann, props map[string]any
		cond, why  string
	}{
		{"no destination", nil, map[string]any{PropDestAddress: "queue:q"}, CondBadRequest, "no destination broker: set application property fedrouter-dest-broker"},
		{"no address", nil, map[string]any{PropDestBroker: "d"}, CondBadRequest, "no destination address"},
		{"bad address", nil, map[string]any{PropDestBroker: "d", PropDestAddress: "topic:x"}, CondBadRequest, `address "topic:x": kind "topic"`},
		{"wrong transit queue", map[string]any{AnnotationDestBroker: "e", AnnotationDestAddress: "queue:q"}, nil, CondBadRequest, "in the transit queue for d but addressed to e"},
		{"too many hops", map[string]any{AnnotationDestBroker: "d", AnnotationDestAddress: "queue:q", AnnotationHops: int64(3), AnnotationTrace: "x,y,a"}, nil,
			CondMaxHops, "made 3 hops (trace x,y,a) without reaching d"},
		// A crafted hop count must not restart the count (issue 17, 2).
		{"negative hops", addressed(AnnotationHops, int64(-1)), nil, CondInvalidField, "x-fedrouter-hops: -1 is negative"},
		{"hops as text", addressed(AnnotationHops, "0"), nil, CondInvalidField, "want a non-negative integer, got string"},
		{"hops as a float", addressed(AnnotationHops, 2.5), nil, CondInvalidField, "want a non-negative integer, got float64"},
		{"hops out of range", addressed(AnnotationHops, uint64(1)<<63), nil, CondInvalidField, "out of range"},
		{"destination not a string", map[string]any{AnnotationDestBroker: int64(4), AnnotationDestAddress: "queue:q"}, nil, CondInvalidField, "x-fedrouter-dest-broker: want a string, got int64"},
		{"trace not a string", addressed(AnnotationTrace, []byte("a,b")), nil, CondInvalidField, "x-fedrouter-trace: want a string"},
		{"huge origin", addressed(AnnotationOrigin, strings.Repeat("o", MaxAnnotationLen+1)), nil, CondInvalidField, "x-fedrouter-origin: 4097 bytes, at most 4096"},
		{"long trace", addressed(AnnotationTrace, strings.Repeat("b,", MaxTraceLen)+"b"), nil, CondInvalidField, "names 257 brokers, at most 256"},
		{"huge property", nil, map[string]any{PropDestBroker: strings.Repeat("d", MaxAnnotationLen+1), PropDestAddress: "queue:q"}, CondInvalidField, "fedrouter-dest-broker: 4097 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cond, why := refusedWith(t, hop, encoded(t, c.ann, c.props))
			if cond != c.cond || !strings.Contains(why, c.why) {
				t.Errorf("refused with %s %q, want %s containing %q", cond, why, c.cond, c.why)
			}
		})
	}
}

// addressed is a well-addressed transit message's annotations plus k=v.
func addressed(k string, v any) map[string]any {
	return map[string]any{AnnotationDestBroker: "d", AnnotationDestAddress: "queue:q", k: v}
}

// A valid hop count is read as it is (the crafted ones are refused
// above: a negative or non-integer annotation cannot reset the count).
func TestReadTransitHops(t *testing.T) {
	if h, err := header(t, encoded(t, addressed(AnnotationHops, int64(2)), nil)); err != nil || h.Hops != 2 {
		t.Fatalf("a valid count: %+v %v", h, err)
	}
}

// An application's request through the ingress is addressed from its
// application properties; annotations, when a message has them, win.
func TestReadTransit(t *testing.T) {
	props := map[string]any{PropDestBroker: "d", PropDestAddress: "exchange:orders:eu.de"}
	h, err := header(t, encoded(t, nil, props))
	if err != nil || h.Dest != "d" || h.Address.Name != "orders" || h.Address.Key != "eu.de" || h.Hops != 0 {
		t.Fatalf("from properties: %+v, %v", h, err)
	}
	ann := map[string]any{AnnotationDestBroker: "e", AnnotationDestAddress: "queue:q", AnnotationHops: int64(2), AnnotationTrace: "a,b"}
	h, err = header(t, encoded(t, ann, props))
	if err != nil || h.Dest != "e" || h.Address.Name != "q" || h.Hops != 2 || strings.Join(h.Trace, ",") != "a,b" {
		t.Fatalf("from annotations: %+v, %v", h, err)
	}
}
