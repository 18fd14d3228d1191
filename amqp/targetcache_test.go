package amqp

import (
	"fmt"
	"testing"
	"time"
)

func TestTargetCacheRemembersPresenceForTTL(t *testing.T) {
	var c targetCache
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	x := Node{Kind: Exchange, Name: "orders"}
	if c.fresh(x, t0) {
		t.Fatal("fresh before it was seen")
	}
	c.saw(Node{Kind: Exchange, Name: "orders", Key: "eu"}, t0)
	switch {
	case !c.fresh(x, t0.Add(targetTTL-time.Millisecond)):
		t.Error("not fresh within the TTL (the key does not matter)")
	case c.fresh(x, t0.Add(targetTTL)):
		t.Error("still fresh at the TTL")
	case c.fresh(Node{Kind: Queue, Name: "orders"}, t0):
		t.Error("a queue of the same name counts as the exchange")
	}
}

func TestTargetCacheStaysBounded(t *testing.T) {
	var c targetCache
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	const perTTL = 2000
	step := targetTTL / perTTL
	for i := range 10 * perTTL { // a new destination every step
		c.saw(Node{Kind: Queue, Name: fmt.Sprint("q", i)}, t0.Add(time.Duration(i)*step))
	}
	if n := len(c.seen); n > 2*perTTL {
		t.Errorf("%d destinations remembered", n)
	}
}
