package ratelog

import (
	"testing"
	"time"
)

// The limiter logs the first occurrence of a key at once, then at most one
// summary per interval with the count of what it held back; every
// occurrence is in a line or a count.
func TestLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := New(10 * time.Second)
	logged := 0
	for i := 0; i < 1000; i++ { // 1,000 in 5 s
		if l.Allow("bad_signature", t0.Add(time.Duration(i)*5*time.Millisecond)) {
			logged++
		}
	}
	if logged != 1 {
		t.Fatalf("%d lines for 1,000 occurrences within one interval", logged)
	}
	if s := l.Due(t0.Add(9 * time.Second)); len(s) != 0 {
		t.Fatalf("summary before the interval is over: %+v", s)
	}
	s := l.Due(t0.Add(10 * time.Second))
	if len(s) != 1 || s[0].Key != "bad_signature" || s[0].Count != 999 || s[0].Over != 10*time.Second {
		t.Fatalf("summary %+v", s)
	}
	// Nothing held back: no summary; the next occurrence after an
	// interval is logged at once again.
	if s := l.Due(t0.Add(30 * time.Second)); len(s) != 0 {
		t.Fatalf("empty summary %+v", s)
	}
	if !l.Allow("bad_signature", t0.Add(31*time.Second)) || !l.Allow("unsigned", t0.Add(31*time.Second)) {
		t.Fatal("a quiet key is not logged at once")
	}
}
