package links

import (
	"sync/atomic"
	"testing"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// annotationAfter is key's value in payload once copy c's annotations are
// written into it (nil: absent).
func annotationAfter(t *testing.T, payload []byte, c engine.Copy, key string) any {
	t.Helper()
	return rewritten(t, payload, c).annotation(key)
}

// A move counts itself on the message (counted in Moved by the forwarder
// once accepted: the copy's Count); a message at its limit, or with a
// count no router wrote, is parked (sent to ParkKey) with the run's
// stamp; meeting its own stamp again, the run has lapped, once.
func TestEngineMoveCountsParksAndLaps(t *testing.T) {
	laps := 0
	mv := &EngineMove{Max: 2, Run: "run1", Lapped: func() { laps++ }, Moved: new(atomic.Uint64), Parked: new(atomic.Uint64)}
	msg := func(moves any, stamp string) []byte {
		ann := map[string]any{}
		if moves != nil {
			ann[AnnotationMoves] = moves
		}
		if stamp != "" {
			ann[AnnotationParked] = stamp
		}
		return encoded(t, ann, nil)
	}
	cases := []struct {
		name   string
		in     []byte
		parked bool
		moves  any
	}{
		{"new", msg(nil, ""), false, int64(1)},
		{"once, parked by an earlier run", msg(int64(1), "run0"), false, int64(2)},
		{"at the limit", msg(uint8(2), ""), true, uint8(2)},
		{"negative", msg(int32(-1), ""), true, int32(-1)},
		{"not a count", msg("0", ""), true, "0"},
		{"an earlier run's", msg(int64(5), "run0"), true, int64(5)},
		{"its own, come round", msg(int64(2), "run1"), true, int64(2)},
		{"its own, again", msg(int64(2), "run1"), true, int64(2)},
	}
	for _, c := range cases {
		s, err := wire.ScanSections(c.in)
		if err != nil {
			t.Fatal(err)
		}
		var ch engine.Choice
		mv.Dispatch(c.in, &s, &ch)
		if ch.Refuse != nil || len(ch.Copies) != 1 {
			t.Fatalf("%s: %+v", c.name, ch)
		}
		cp := ch.Copies[0]
		if want := map[bool]string{true: ParkKey, false: ""}[c.parked]; cp.To != want {
			t.Fatalf("%s: to %q, want %q", c.name, cp.To, want)
		}
		if !c.parked && cp.Count != mv.Moved {
			t.Errorf("%s: a move not counted in Moved", c.name)
		}
		if got := annotationAfter(t, c.in, cp, AnnotationMoves); got != c.moves {
			t.Errorf("%s: moves %v (%T), want %v (%T)", c.name, got, got, c.moves, c.moves)
		}
		stamp := annotationAfter(t, c.in, cp, AnnotationParked)
		if c.parked && stamp != "run1" || !c.parked && stamp != nil {
			t.Errorf("%s: parked stamp %v", c.name, stamp)
		}
	}
	if laps != 1 || mv.Parked.Load() != 6 {
		t.Fatalf("laps %d, parked %d; want 1 and 6", laps, mv.Parked.Load())
	}
}
