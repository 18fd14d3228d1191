package router

import (
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/routes"
)

// The progress decision over a start: a line every 5 s while routes come
// up, the summary once all are up, nothing after it.
func TestStartProgressLines(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	st := startProgress{began: t0, last: t0}
	steps := []struct {
		at        time.Duration
		up, total int
		want      string
		summary   bool
	}{
		{0, 0, 10000, "", false},
		{time.Second, 1200, 10000, "", false},
		{5 * time.Second, 4100, 10000, "routes: 4,100 of 10,000 Operational", false},
		{6 * time.Second, 5000, 10000, "", false},
		{10 * time.Second, 9800, 10000, "routes: 9,800 of 10,000 Operational", false},
		{12*time.Second + 250*time.Millisecond, 10000, 10000, "routes: all 10,000 Operational after 12.25s", true},
		{15 * time.Second, 10000, 10000, "", false},
		{20 * time.Second, 9000, 10000, "", false}, // after the summary: nothing
	}
	for _, s := range steps {
		var line *progressLine
		st, line = nextProgress(st, s.up, s.total, t0.Add(s.at), 5*time.Second, time.Minute)
		got := ""
		if line != nil {
			got = line.Text
			if line.Summary != s.summary || line.Up != s.up || line.Total != s.total {
				t.Errorf("at %s: line %+v", s.at, line)
			}
		}
		if got != s.want {
			t.Errorf("at %s (%d of %d): %q, want %q", s.at, s.up, s.total, got, s.want)
		}
	}
}

// Routes that do not all come up: the summary at the bound says how many
// did not; no routes restored: no line.
func TestStartProgressBoundAndNone(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	st, line := nextProgress(startProgress{began: t0, last: t0}, 280, 300, t0.Add(time.Minute), 5*time.Second, time.Minute)
	if line == nil || !line.Summary || !st.done || line.Text != "routes: 280 of 300 Operational after 1m0s; 20 not Operational (route list shows why)" {
		t.Errorf("at the bound: %+v (done %v)", line, st.done)
	}
	st, line = nextProgress(startProgress{began: t0, last: t0}, 0, 0, t0.Add(time.Second), 5*time.Second, time.Minute)
	if line != nil || !st.done {
		t.Errorf("no routes: %+v (done %v)", line, st.done)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 9800: "9,800", 10000: "10,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// countUp follows the restored routes only: one added since is not
// counted, one deleted since is no longer waited for.
func TestCountUpRestoredOnly(t *testing.T) {
	ids := map[string]bool{"a": true, "b": true, "gone": true}
	up, total := countUp(ids, []routes.Status{{ID: "a", State: routes.StateOperational}, {ID: "b", State: routes.StateWaiting},
		{ID: "new", State: routes.StateOperational}})
	if up != 1 || total != 2 {
		t.Errorf("up %d of %d, want 1 of 2", up, total)
	}
}
