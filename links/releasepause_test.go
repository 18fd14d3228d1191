package links

import (
	"testing"
	"time"
)

// The pause after a release: it runs for ReleasePauseMin, a release
// during it neither extends nor doubles it, each release after one
// doubles the next up to ReleasePauseMax, and an accepted message makes
// it ReleasePauseMin again.
func TestReleasePause(t *testing.T) {
	var p releasePause
	ms := func(d time.Duration) int64 { return int64(d) }
	if p.holding(0) {
		t.Fatal("holding before any release")
	}
	steps := []struct {
		at       time.Duration
		release  bool
		accepted bool
		holding  bool
	}{
		{at: 0, release: true, holding: true},                     // 100 ms from 0
		{at: 50 * time.Millisecond, release: true, holding: true}, // during it: unchanged
		{at: 99 * time.Millisecond, holding: true},
		{at: 100 * time.Millisecond, holding: false},
		{at: 200 * time.Millisecond, release: true, holding: true}, // 200 ms from 200
		{at: 399 * time.Millisecond, holding: true},
		{at: 400 * time.Millisecond, release: true, holding: true}, // ended at 400: 400 ms more
		{at: 799 * time.Millisecond, holding: true},
		{at: 800 * time.Millisecond, accepted: true, holding: false},
		{at: time.Second, release: true, holding: true}, // ReleasePauseMin again
		{at: time.Second + 100*time.Millisecond, holding: false},
	}
	for i, s := range steps {
		now := ms(s.at)
		if s.accepted {
			p.accepted()
		}
		if s.release {
			p.released(now)
		}
		if got := p.holding(now); got != s.holding {
			t.Fatalf("step %d at %v: holding %v, want %v", i, s.at, got, s.holding)
		}
	}
	var q releasePause
	now := int64(0)
	for range 20 {
		q.released(now)
		now = q.until.Load() // the next release comes as the pause ends
	}
	if d := q.next.Load(); d != ms(ReleasePauseMax) {
		t.Fatalf("after 20 releases the next pause is %v, want %v", time.Duration(d), ReleasePauseMax)
	}
	q.released(now)
	if got := time.Duration(q.until.Load() - now); got != ReleasePauseMax {
		t.Fatalf("pause %v past the cap, want %v", got, ReleasePauseMax)
	}
}
