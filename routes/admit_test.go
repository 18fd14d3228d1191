package routes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// A dynamic route between brokers whose profiles cannot follow demand is
// refused at add, naming them, instead of added to fail for ever.
func TestDynamicAddRefusedWithoutDemandSupport(t *testing.T) {
	brokers := map[string]amqp.Broker{}
	for _, name := range []string{"a", "b"} {
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
		brokers[name] = amqp.Broker{Conn: c, Profile: p}
	}
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
