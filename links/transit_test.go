package routes

import (
	"context"
	"strings"
	"testing"

	goamqp "github.com/Azure/go-amqp"
)

// refusedWith runs one message through a dispatch sink that must refuse
// it before any I/O, and returns the condition and reason.
func refusedWith(t *testing.T, s *dispatchSink, msg *goamqp.Message) (string, string) {
	t.Helper()
	r, err := s.Send(context.Background(), msg)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	st, err := r.Wait(context.Background())
	rej, ok := st.(*goamqp.StateRejected)
	if err != nil || !ok || rej.Error == nil {
		t.Fatalf("outcome %#v, %v: want rejected", st, err)
	}
	return string(rej.Error.Condition), rej.Error.Description
}

func TestDispatchRefusesBadRequests(t *testing.T) {
	hop := &dispatchSink{at: "b", from: "a", only: "d", maxHops: 3}
	cases := []struct {
		name      string
		ann       goamqp.Annotations
		props     map[string]any
		cond, why string
	}{
		{"no destination", nil, map[string]any{PropDestAddress: "queue:q"}, CondBadRequest, "no destination broker: set application property fedrouter-dest-broker"},
		{"no address", nil, map[string]any{PropDestBroker: "d"}, CondBadRequest, "no destination address"},
		{"bad address", nil, map[string]any{PropDestBroker: "d", PropDestAddress: "topic:x"}, CondBadRequest, `address "topic:x": kind "topic"`},
		{"wrong transit queue", goamqp.Annotations{AnnotationDestBroker: "e", AnnotationDestAddress: "queue:q"}, nil, CondBadRequest, "in the transit queue for d but addressed to e"},
		{"too many hops", goamqp.Annotations{AnnotationDestBroker: "d", AnnotationDestAddress: "queue:q", AnnotationHops: int64(3), TraceAnnotation: "x,y,a"}, nil,
			CondMaxHops, "made 3 hops (trace x,y,a) without reaching d"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := goamqp.NewMessage([]byte("m"))
			msg.Annotations, msg.ApplicationProperties = c.ann, c.props
			cond, why := refusedWith(t, hop, msg)
			if cond != c.cond || !strings.Contains(why, c.why) {
				t.Errorf("refused with %s %q, want %s containing %q", cond, why, c.cond, c.why)
			}
		})
	}
}

// An application's request through the ingress is addressed from its
// application properties; annotations, when a message has them, win.
func TestReadHeader(t *testing.T) {
	msg := goamqp.NewMessage(nil)
	msg.ApplicationProperties = map[string]any{PropDestBroker: "d", PropDestAddress: "exchange:orders:eu.de"}
	h, err := readHeader(msg)
	if err != nil || h.dest != "d" || h.address.Name != "orders" || h.address.Key != "eu.de" || h.hops != 0 {
		t.Fatalf("from properties: %+v, %v", h, err)
	}
	msg.Annotations = goamqp.Annotations{AnnotationDestBroker: "e", AnnotationDestAddress: "queue:q", AnnotationHops: int64(2), TraceAnnotation: "a,b"}
	h, err = readHeader(msg)
	if err != nil || h.dest != "e" || h.address.Name != "q" || h.hops != 2 || strings.Join(h.trace, ",") != "a,b" {
		t.Fatalf("from annotations: %+v, %v", h, err)
	}
	setEntry(msg, "s", "z", h.address)
	if msg.Annotations[AnnotationDestBroker] != "z" || msg.Annotations[AnnotationHops] != int64(0) || msg.Annotations[TraceAnnotation] != nil ||
		msg.Annotations[AnnotationOrigin] != "s" {
		t.Fatalf("setEntry: %v", msg.Annotations)
	}
}
