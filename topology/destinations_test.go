package topology

import (
	"fmt"
	"testing"
	"time"
)

func TestDestinationRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	d := NewDestinations(2 * time.Minute)
	adv := func() string { return fmt.Sprint(d.Advertised()) }
	steps := []struct {
		name    string
		o       *DestObservation // nil: Tick
		now     time.Time
		changed bool
		want    string
	}{
		{"configured: advertised when created", &DestObservation{Broker: "b", Name: "orders", Kind: DestConfigured}, at(0), true, "map[b:[orders]]"},
		{"auto-created by a producer: stays local", &DestObservation{Broker: "b", Name: "auto", Kind: DestAutoCreated, Messages: 3}, at(1), false, "map[b:[orders]]"},
		{"a consumer appears: advertised", &DestObservation{Broker: "b", Name: "auto", Kind: DestAutoCreated, Consumers: 1, Messages: 3}, at(2), true, "map[b:[auto orders]]"},
		{"consumer gone, messages left: kept", &DestObservation{Broker: "b", Name: "auto", Kind: DestAutoCreated, Messages: 1}, at(3), false, "map[b:[auto orders]]"},
		{"empty and unused: idle from now", &DestObservation{Broker: "b", Name: "auto", Kind: DestAutoCreated}, at(10), false, "map[b:[auto orders]]"},
		{"not yet idle for 2 minutes", nil, at(129), false, "map[b:[auto orders]]"},
		{"idle 2 minutes: withdrawn", nil, at(130), true, "map[b:[orders]]"},
		{"created with a consumer: advertised with it", &DestObservation{Broker: "c", Name: "withc", Kind: DestAutoCreated, Consumers: 2}, at(131), true, "map[b:[orders] c:[withc]]"},
		{"temporary with its consumer", &DestObservation{Broker: "b", Name: "tmp", Kind: DestTemporary, Consumers: 1}, at(132), true, "map[b:[orders tmp] c:[withc]]"},
		{"temporary: consumer gone, withdrawn", &DestObservation{Broker: "b", Name: "tmp", Kind: DestTemporary}, at(133), true, "map[b:[orders] c:[withc]]"},
		{"configured: withdrawn when deleted", &DestObservation{Broker: "b", Name: "orders", Deleted: true}, at(134), true, "map[c:[withc]]"},
		{"deleting the unknown changes nothing", &DestObservation{Broker: "b", Name: "nothing", Deleted: true}, at(135), false, "map[c:[withc]]"},
	}
	for _, s := range steps {
		var changed bool
		if s.o == nil {
			changed = d.Tick(s.now)
		} else {
			changed = d.Observe(*s.o, s.now)
		}
		if changed != s.changed || adv() != s.want {
			t.Fatalf("%s: changed %v advertised %s, want %v %s", s.name, changed, adv(), s.changed, s.want)
		}
	}
}

func TestDestinationsNextTick(t *testing.T) {
	d := NewDestinations(0)
	t0 := time.Unix(0, 0)
	if !d.NextTick().IsZero() {
		t.Fatal("empty table has a tick due")
	}
	d.Observe(DestObservation{Broker: "b", Name: "q", Kind: DestAutoCreated, Consumers: 1}, t0)
	d.Observe(DestObservation{Broker: "b", Name: "q", Kind: DestAutoCreated}, t0.Add(time.Second))
	if got := d.NextTick(); !got.Equal(t0.Add(time.Second + DefaultDestIdle)) {
		t.Fatalf("next tick %v", got)
	}
}
