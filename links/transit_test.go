package links

import (
	"context"
	"strings"
	"testing"

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
