package routes

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/topology"
)

// idleBroker is a generic broker whose connection never comes up (port
// 1, retried hourly): admission needs a broker, not a peer.
func idleBroker(t *testing.T, name string) amqp.Broker {
	t.Helper()
	cfg := amqp.BrokerConfig{Name: name, URLs: []string{"amqp://127.0.0.1:1"}, Profile: "generic"}
	c, err := amqp.Dial(t.Context(), cfg, amqp.ConnOptions{Backoff: amqp.Backoff{Min: time.Hour, Max: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	p, err := amqp.NewProfile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return amqp.Broker{Conn: c, Profile: p}
}

// A dynamic route between brokers whose profiles cannot follow demand is
// refused at add, naming them, instead of added to fail for ever.
func TestDynamicAddRefusedWithoutDemandSupport(t *testing.T) {
	brokers := map[string]amqp.Broker{"a": idleBroker(t, "a"), "b": idleBroker(t, "b")}
	m := NewManager(t.Context(), Options{RouterID: "r", Brokers: brokers})
	t.Cleanup(func() { m.Stop(context.Background()) })
	_, err := m.Add(t.Context(), Spec{Kind: KindDynamic, Dest: "b", Src: "a", Exchange: "amq.topic"})
	var se *SpecError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "dynamic routes need brokers whose profile can read and manage bindings (rabbitmq): a is generic, b is generic") {
		t.Fatalf("add: %v", err)
	}
	if len(m.List()) != 0 {
		t.Fatalf("a refused route is listed: %v", m.List())
	}
	if _, err := m.Admit(Spec{Kind: KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "q"}); err != nil {
		t.Fatalf("a queue route between the same brokers: %v", err)
	}
}

// namedTable is a link-state table that has named some brokers and
// computed no paths.
type namedTable struct{ named []string }

func (t namedTable) Paths() (*topology.Paths, <-chan struct{}) { return nil, nil }
func (t namedTable) Known(b string) bool                       { return slices.Contains(t.named, b) }
func (t namedTable) NextHop(string, string) (string, bool)     { return "", false }
func (t namedTable) Advertised() []ExchangeEdge                { return nil }

// A multi-hop route towards a broker no advertisement has named is
// refused at add, naming the broker as typed, unless forced; the route
// added with force keeps no trace of it. A named one is admitted without.
func TestRemoteAddRefusedUnlessNamed(t *testing.T) {
	m := NewManager(t.Context(), Options{RouterID: "r", Brokers: map[string]amqp.Broker{"a": idleBroker(t, "a")},
		Table: namedTable{named: []string{"a", "tokyo"}}})
	t.Cleanup(func() { m.Stop(context.Background()) })
	spec := Spec{Kind: KindQueue, Dest: "tokio", Src: "a", Exchange: "x", Queue: "q"}
	_, err := m.Admit(spec)
	var se *SpecError
	if !errors.As(err, &se) || len(se.Problems) != 1 || !strings.Contains(se.Problems[0], `broker "tokio" is not in brokers and no router has advertised it`) ||
		!strings.Contains(se.Problems[0], "--force") {
		t.Fatalf("admit towards a broker never named: %v", err)
	}
	spec.Force = true
	got, err := m.Admit(spec)
	if err != nil || got.Force || got.Dest != "tokio" {
		t.Fatalf("forced: %+v, %v", got, err)
	}
	if _, err := m.Admit(Spec{Kind: KindQueue, Dest: "tokyo", Src: "a", Exchange: "x", Queue: "q"}); err != nil {
		t.Fatalf("towards a named broker: %v", err)
	}
	// The start (configured and saved routes) judges nothing by names.
	if _, err := m.Normalize(Spec{Kind: KindQueue, Dest: "tokio", Src: "a", Exchange: "x", Queue: "q"}); err != nil {
		t.Fatalf("normalize: %v", err)
	}
}
