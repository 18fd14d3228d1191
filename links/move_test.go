package links

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/fedrouter/fedrouter/amqp"
)

// A move counts itself on the message; a message at its limit, or with a
// count no router wrote, is parked (written back where it was) with the
// run's stamp; meeting its own stamp again, the run has lapped.
func TestMoveSinkCountsParksAndLaps(t *testing.T) {
	accept := func(string) (*amqp.Outcome, error) { return outcome(amqp.Accepted), nil }
	moved, parked := &fakeSink{outcome: accept}, &fakeSink{outcome: accept}
	laps := 0
	s := &MoveSink{Move: moved, Park: parked, Max: 2, Run: "run1", Lapped: func() { laps++ }, Moved: new(atomic.Uint64), Parked: new(atomic.Uint64)}
	msg := func(moves any, stamp string) amqp.Message {
		m := amqp.NewMessage([]byte("x"))
		if moves != nil {
			m.SetAnnotation(AnnotationMoves, moves)
		}
		if stamp != "" {
			m.SetAnnotation(AnnotationParked, stamp)
		}
		return m
	}
	cases := []struct {
		name   string
		in     amqp.Message
		parked bool
		moves  any
	}{
		{"new", msg(nil, ""), false, int64(1)},
		{"once, parked by an earlier run", msg(int64(1), "run0"), false, int64(2)},
		{"at the limit", msg(uint8(2), ""), true, uint8(2)},
		{"negative", msg(int32(-1), ""), true, int32(-1)},
		{"not a count", msg("0", ""), true, "0"},
		{"an earlier run's", msg(int64(5), "run0"), true, int64(5)},
	}
	for _, c := range cases {
		nm, np := len(moved.sent), len(parked.sent)
		r, err := s.Send(context.Background(), c.in)
		if err == nil {
			_, err = r.Wait(context.Background()) // a move counts once accepted
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := moved.sent
		if c.parked {
			got = parked.sent
		}
		if len(moved.sent)-nm+len(parked.sent)-np != 1 || len(got) == 0 {
			t.Fatalf("%s: moved %d, parked %d", c.name, len(moved.sent)-nm, len(parked.sent)-np)
		}
		out := got[len(got)-1]
		if out.Annotation(AnnotationMoves) != c.moves {
			t.Errorf("%s: moves %v (%T), want %v", c.name, out.Annotation(AnnotationMoves), out.Annotation(AnnotationMoves), c.moves)
		}
		if stamp := out.AnnotationString(AnnotationParked); c.parked && stamp != "run1" || !c.parked && stamp != "" {
			t.Errorf("%s: parked stamp %q", c.name, stamp)
		}
	}
	if laps != 0 || s.Moved.Load() != 2 || s.Parked.Load() != 4 {
		t.Fatalf("laps %d, moved %d, parked %d", laps, s.Moved.Load(), s.Parked.Load())
	}
	// A move the target refuses did not move: not counted.
	refusing := &MoveSink{Move: &fakeSink{outcome: func(string) (*amqp.Outcome, error) { return outcome(amqp.Released), nil }},
		Park: parked, Max: 2, Run: "run1", Lapped: func() { laps++ }, Moved: s.Moved, Parked: s.Parked}
	if r, err := refusing.Send(context.Background(), msg(nil, "")); err != nil {
		t.Fatal(err)
	} else if o, _ := r.Wait(context.Background()); o.Kind != amqp.Released || s.Moved.Load() != 2 {
		t.Fatalf("a refused move: %v, moved %d, want released and still 2", o, s.Moved.Load())
	}
	// Its own parked messages come round again: lapped, once; still parked.
	for range 2 {
		if _, err := s.Send(context.Background(), msg(int64(2), "run1")); err != nil {
			t.Fatal(err)
		}
	}
	if laps != 1 || s.Parked.Load() != 6 {
		t.Fatalf("laps %d, parked %d", laps, s.Parked.Load())
	}
}
