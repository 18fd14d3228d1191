package links

import (
	"testing"
	"time"
)

// A gate closed by Set is Closed until Set opens it, and the channel
// opened gives while it is closed is closed when it opens; an open gate
// gives none (never ready).
func TestGateSet(t *testing.T) {
	g := NewGate()
	if g.Closed() || g.opened() != nil {
		t.Fatal("a new gate is closed")
	}
	g.Set(true)
	open := g.opened()
	if !g.Closed() || open == nil {
		t.Fatal("Set(true) left the gate open")
	}
	select {
	case <-open:
		t.Fatal("opened is ready while the gate is closed")
	default:
	}
	g.Set(true) // again: nothing changes
	g.Set(false)
	select {
	case <-open:
	default:
		t.Fatal("opened is not ready once the gate opened")
	}
	if g.Closed() || g.opened() != nil {
		t.Fatal("Set(false) left the gate closed")
	}
}

// A refusal by the instance closes the gate for RefusalPause (no channel:
// the forwarder sees it open at a later tick) and is counted.
func TestGateRefusalPauses(t *testing.T) {
	g := NewGate()
	g.refuse()
	if !g.Closed() || g.Refusals() != 1 {
		t.Fatalf("after a refusal: closed %v, refusals %d", g.Closed(), g.Refusals())
	}
	if g.opened() != nil {
		t.Fatal("a refusal's pause gave a channel")
	}
	deadline := time.Now().Add(10 * RefusalPause)
	for g.Closed() {
		if time.Now().After(deadline) {
			t.Fatalf("still closed %s after a refusal", 10*RefusalPause)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
