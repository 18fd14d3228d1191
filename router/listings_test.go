package router

import (
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// A listing is shared while fresh, never after.
func TestListingsFresh(t *testing.T) {
	var l listings
	t0 := time.Unix(1000, 0)
	if _, ok := l.fresh("b1", time.Second, t0); ok {
		t.Fatal("a listing nobody made")
	}
	l.put("b1", []amqp.QueueInfo{{Name: "q", Consumers: 2}}, t0)
	if qs, ok := l.fresh("b1", 5*time.Second, t0.Add(4*time.Second)); !ok || len(qs) != 1 || qs[0].Consumers != 2 {
		t.Fatalf("fresh listing: %v %v", qs, ok)
	}
	if _, ok := l.fresh("b1", 5*time.Second, t0.Add(5*time.Second)); ok {
		t.Fatal("a stale listing shared")
	}
	if _, ok := l.fresh("b2", 5*time.Second, t0); ok {
		t.Fatal("another broker's listing")
	}
}
