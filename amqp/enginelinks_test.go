package amqp

import (
	"context"
	"reflect"
	"testing"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// The engine attaches every filter a profile asks for, encoded as
// go-amqp encodes it (goamqp.NewLinkFilter): a map of the filters'
// names to described values, by code or else by name.
func TestEngineFilters(t *testing.T) {
	ctx := context.Background()
	sub := Subscription{Name: "fedrouter.route.r1"}
	topic, err := genericProfile{}.Source(ctx, Node{Kind: Exchange, Name: "amq.topic", Key: "eu.#"}, sub)
	if err != nil {
		t.Fatal(err)
	}
	selector, err := artemisProfile{}.Source(ctx, Node{Kind: Exchange, Name: "prices", Key: "it's"}, sub)
	if err != nil {
		t.Fatal(err)
	}
	byName := LinkSpec{Address: "q", Filters: []SourceFilter{{Name: "x-custom", Value: "v"},
		{Name: filterSelectorName, Code: filterSelectorCode, Value: "a = 1"}}}
	for name, c := range map[string]struct {
		spec LinkSpec
		want wire.Map
	}{
		"topic binding": {topic, wire.Map{{Key: wire.Symbol(filterTopicName),
			Value: wire.Described{Descriptor: uint64(filterTopicCode), Value: "eu.#"}}}},
		"selector": {selector, wire.Map{{Key: wire.Symbol(filterSelectorName),
			Value: wire.Described{Descriptor: uint64(filterSelectorCode), Value: "AMQPROUTINGKEY = 'it''s'"}}}},
		"by name, two": {byName, wire.Map{
			{Key: wire.Symbol("x-custom"), Value: wire.Described{Descriptor: wire.Symbol("x-custom"), Value: "v"}},
			{Key: wire.Symbol(filterSelectorName), Value: wire.Described{Descriptor: uint64(filterSelectorCode), Value: "a = 1"}}}},
	} {
		o, err := c.spec.EngineReceiver(artemisProfile{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := wire.NewDecoder(o.Filter)
		got := d.Value()
		if d.Err() != nil || d.Len() != 0 || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: filter %#v (%v), want %#v", name, got, d.Err(), c.want)
		}
		if n := len(c.spec.ReceiverOptions().Filters); n != len(c.spec.Filters) {
			t.Errorf("%s: go-amqp gets %d filters, want %d", name, n, len(c.spec.Filters))
		}
	}
	if o, _ := (LinkSpec{Address: "q"}).EngineReceiver(nil); o.Filter != nil {
		t.Fatalf("no filter asked, % x sent", o.Filter)
	}
}

// A target's subject goes to the engine's sender, which sets it on every
// message (amqp/engine's tests); no target is refused.
func TestEngineSenderSubject(t *testing.T) {
	p := &qpidProfile{}
	spec, err := p.Target(Node{Kind: Exchange, Name: "amq.topic", Key: "news.eu"})
	if err != nil {
		t.Fatal(err)
	}
	so, err := spec.EngineSender()
	if err != nil || so.Subject != "news.eu" || so.Address != "amq.topic" {
		t.Fatalf("engine sender %+v, %v", so, err)
	}
}
