package links

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// refusedWith runs one message through a dispatch sink that must refuse
// it before any I/O, and returns the condition and reason.
func refusedWith(t *testing.T, s *DispatchSink, msg amqp.Message) (string, string) {
	t.Helper()
	r, err := s.Send(t.Context(), msg)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	o, err := r.Wait(context.Background())
	if err != nil || o.Kind != amqp.Rejected {
		t.Fatalf("outcome %+v, %v: want rejected", o, err)
	}
	return o.Condition, o.Description
}

// message is a message with these annotations and application properties.
func message(ann, props map[string]any) amqp.Message {
	m := amqp.NewMessage([]byte("m"))
	for k, v := range ann {
		m.SetAnnotation(k, v)
	}
	m.GoAMQP().ApplicationProperties = props
	return m
}

func TestDispatchRefusesBadRequests(t *testing.T) {
	hop := &DispatchSink{At: "b", From: "a", Only: "d", MaxHops: 3}
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
			cond, why := refusedWith(t, hop, message(c.ann, c.props))
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

// A crafted message in a transit queue is refused at the source with the
// rule it broke, never forwarded (issue 17, finding 2): the hop count
// cannot be reset by a negative or non-integer annotation.
func TestForwardRefusesCraftedHops(t *testing.T) {
	src := &fakeSource{settled: map[amqp.Message]string{}}
	for _, v := range []any{int64(-1), "0", 2.5} {
		src.msgs = append(src.msgs, message(addressed(AnnotationHops, v), nil))
	}
	ok := message(addressed(AnnotationHops, int64(2)), nil)
	hop := &DispatchSink{At: "b", From: "a", Only: "d", MaxHops: 3}
	c, err := run(t, src, hop, Config{Window: 4, OutcomeTimeout: time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	if c.Rejected.Load() != 3 || c.Forwarded.Load() != 0 || c.Sent.Load() != 3 {
		t.Fatalf("rejected %d forwarded %d sent %d", c.Rejected.Load(), c.Forwarded.Load(), c.Sent.Load())
	}
	if got := strings.Join(src.conds, " "); got != "amqp:invalid-field amqp:invalid-field amqp:invalid-field" {
		t.Fatalf("conditions %s", got)
	}
	if h, err := ReadTransit(ok); err != nil || h.Hops != 2 {
		t.Fatalf("a valid count: %+v %v", h, err)
	}
}

// An application's request through the ingress is addressed from its
// application properties; annotations, when a message has them, win.
func TestReadTransit(t *testing.T) {
	msg := message(nil, map[string]any{PropDestBroker: "d", PropDestAddress: "exchange:orders:eu.de"})
	h, err := ReadTransit(msg)
	if err != nil || h.Dest != "d" || h.Address.Name != "orders" || h.Address.Key != "eu.de" || h.Hops != 0 {
		t.Fatalf("from properties: %+v, %v", h, err)
	}
	for k, v := range map[string]any{AnnotationDestBroker: "e", AnnotationDestAddress: "queue:q", AnnotationHops: int64(2), AnnotationTrace: "a,b"} {
		msg.SetAnnotation(k, v)
	}
	h, err = ReadTransit(msg)
	if err != nil || h.Dest != "e" || h.Address.Name != "q" || h.Hops != 2 || strings.Join(h.Trace, ",") != "a,b" {
		t.Fatalf("from annotations: %+v, %v", h, err)
	}
	EnterTransit(msg, "s", "z", h.Address)
	if msg.Annotation(AnnotationDestBroker) != "z" || msg.Annotation(AnnotationHops) != int64(0) || msg.Annotation(AnnotationTrace) != nil ||
		msg.Annotation(AnnotationOrigin) != "s" {
		t.Fatalf("EnterTransit: %v", msg.GoAMQP().Annotations)
	}
}
