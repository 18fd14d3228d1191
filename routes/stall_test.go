package routes

import (
	"strings"
	"testing"
	"time"
)

// A look of the stall core's scripts: at second `at`, the route is seen
// as obs; want says what the verdict must be.
type stallLook struct {
	at       float64
	obs      stallObs
	stalled  bool
	reattach bool
	log      string // a word of the expected log line; "" for none
	askDepth bool
}

// Observations the scripts use (stall_after is 60 s throughout).
var (
	idle      = stallObs{Attached: true, Depth: -1, HasDepth: true} // depth not asked
	empty     = stallObs{Attached: true, Depth: 0, HasDepth: true}
	backlog   = stallObs{Attached: true, Depth: 500, HasDepth: true, Credit: 100} // credit granted, nothing arrives
	detached  = stallObs{Depth: -1, HasDepth: true}
	noDepth   = stallObs{Attached: true, Depth: -1}                         // a profile that cannot tell
	stuckDest = stallObs{Attached: true, Depth: -1, InFlight: 50, Held: 50} // the destination settles nothing
	moved     = func(o stallObs, n uint64) stallObs { o.Progress = n; return o }
	rerun     = func(o stallObs) stallObs { o.Run++; return o } // attached again
	heldBack  = stallObs{Attached: true, Depth: 500, HasDepth: true, Held: 1, InFlight: 1, HeldBack: true}
)

func TestStallDecide(t *testing.T) {
	for _, tc := range []struct {
		name  string
		looks []stallLook
	}{
		{"an idle route with an empty source is never stalled", []stallLook{
			{at: 0, obs: idle}, {at: 30, obs: idle, askDepth: true}, {at: 40, obs: empty, askDepth: true},
			{at: 120, obs: empty, askDepth: true}, {at: 600, obs: empty, askDepth: true},
		}},
		{"a route that forwards is never stalled, whatever waits", []stallLook{
			{at: 0, obs: backlog}, {at: 50, obs: moved(backlog, 1)}, {at: 100, obs: moved(backlog, 2)},
			{at: 150, obs: moved(backlog, 3)}, {at: 200, obs: moved(backlog, 4)},
		}},
		{"source holds messages, none arrives: stalled after stall_after, re-attached once, then left attached", []stallLook{
			{at: 0, obs: idle},
			{at: 30, obs: idle, askDepth: true},
			{at: 31, obs: backlog, askDepth: true},
			{at: 59, obs: backlog, askDepth: true},
			{at: 61, obs: backlog, askDepth: true, stalled: true, reattach: true, log: "re-attaching its links once"},
			{at: 62, obs: backlog, askDepth: true, stalled: true}, // the old run settles what it has in flight
			{at: 70, obs: detached, stalled: true},                // the re-attach
			{at: 73, obs: rerun(backlog), askDepth: true, stalled: true},
			{at: 130, obs: rerun(backlog), askDepth: true, stalled: true},
			{at: 133, obs: rerun(backlog), askDepth: true, stalled: true, log: "not re-attached again"},
			{at: 300, obs: rerun(backlog), askDepth: true, stalled: true},
			{at: 3000, obs: rerun(backlog), askDepth: true, stalled: true},
			{at: 3001, obs: moved(rerun(backlog), 1), log: "forwards again after being stalled for 49m0s"},
			{at: 3002, obs: moved(rerun(backlog), 2)},
		}},
		{"a second stall after progress is a new one: re-attached once again", []stallLook{
			{at: 0, obs: backlog}, {at: 30, obs: backlog, askDepth: true},
			{at: 61, obs: backlog, askDepth: true, stalled: true, reattach: true, log: "stalled"},
			{at: 70, obs: moved(backlog, 5), log: "forwards again"},
			{at: 100, obs: moved(backlog, 5), askDepth: true},
			{at: 131, obs: moved(backlog, 5), askDepth: true, stalled: true, reattach: true, log: "re-attaching"},
		}},
		{"a message that just arrived at a long idle queue is no stall", []stallLook{
			{at: 0, obs: idle}, {at: 30, obs: empty, askDepth: true}, {at: 100, obs: empty, askDepth: true},
			{at: 101, obs: backlog, askDepth: true}, {at: 120, obs: backlog, askDepth: true},
			{at: 131, obs: backlog, askDepth: true, stalled: true, reattach: true, log: "the source holds 500 messages and none arrives (100 credit granted)"},
		}},
		{"a source emptied ends the stall, once the new run has been attached for half of stall_after", []stallLook{
			{at: 0, obs: backlog}, {at: 61, obs: backlog, askDepth: true, stalled: true, reattach: true, log: "stalled"},
			{at: 70, obs: idle, askDepth: true, stalled: true},  // depth unknown: nothing changes
			{at: 71, obs: empty, askDepth: true, stalled: true}, // the re-attach is under way: what the old run held is not ready
			{at: 72, obs: rerun(empty), askDepth: true, stalled: true},
			{at: 101, obs: rerun(empty), askDepth: true, stalled: true}, // the broker's statistics may lag
			{at: 102, obs: rerun(empty), log: "no longer stalled"},
			{at: 130, obs: rerun(empty)},
		}},
		{"an empty source read while the re-attach is pending does not end the stall (nor announce a second)", []stallLook{
			{at: 0, obs: noDepth}, {at: 10, obs: stuckDest}, {at: 61, obs: stuckDest, stalled: true, reattach: true, log: "re-attaching its links once"},
			{at: 62, obs: empty, askDepth: true, stalled: true},
			{at: 63, obs: detached, stalled: true},
			{at: 64, obs: rerun(stuckDest), stalled: true},
			{at: 125, obs: rerun(stuckDest), stalled: true, log: "not re-attached again"},
		}},
		{"a destination that settles nothing, on a profile without depth", []stallLook{
			{at: 0, obs: noDepth}, {at: 10, obs: stuckDest}, {at: 61, obs: stuckDest, stalled: true, reattach: true,
				log: "50 messages sent to the destination wait for its outcome; nothing forwarded for 1m1s"},
			{at: 62, obs: detached, stalled: true},
			{at: 63, obs: rerun(noDepth), stalled: true}, // holds nothing until its messages come back: still stalled
			{at: 64, obs: rerun(stuckDest), stalled: true},
			{at: 122, obs: rerun(stuckDest), stalled: true},
			{at: 123, obs: rerun(stuckDest), stalled: true, log: "still stalled"},
			{at: 200, obs: moved(rerun(stuckDest), 1), log: "forwards again"},
		}},
		{"a re-attach slower than stall_after: the second line waits for the new run", []stallLook{
			{at: 0, obs: stuckDest}, {at: 61, obs: stuckDest, stalled: true, reattach: true, log: "stalled"},
			{at: 125, obs: stuckDest, stalled: true}, // the old run still drains
			{at: 200, obs: rerun(stuckDest), stalled: true},
			{at: 259, obs: rerun(stuckDest), stalled: true},
			{at: 260, obs: rerun(stuckDest), stalled: true, log: "still stalled"},
		}},
		{"a route its destination's limit holds back is not stalled", []stallLook{
			{at: 0, obs: backlog}, {at: 61, obs: backlog, askDepth: true, stalled: true, reattach: true, log: "stalled"},
			{at: 70, obs: heldBack, log: "held back by its destination's limit"},
			{at: 200, obs: heldBack}, {at: 1000, obs: heldBack},
			{at: 1001, obs: backlog}, {at: 1031, obs: backlog, askDepth: true},
			{at: 1062, obs: backlog, askDepth: true, stalled: true, reattach: true, log: "stalled"},
		}},
		{"a profile without depth and nothing held cannot tell: never stalled", []stallLook{
			{at: 0, obs: noDepth}, {at: 100, obs: noDepth}, {at: 1000, obs: noDepth},
		}},
		{"a route that comes back from an outage is judged afresh", []stallLook{
			{at: 0, obs: backlog}, {at: 50, obs: detached}, {at: 51, obs: backlog},
			{at: 100, obs: backlog, askDepth: true},
			{at: 112, obs: backlog, askDepth: true, stalled: true, reattach: true, log: "stalled"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr stallTrack
			t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
			for _, l := range tc.looks {
				var v stallVerdict
				v, tr = stallDecide(time.Minute, tr, l.obs, t0.Add(time.Duration(l.at*float64(time.Second))))
				if v.Stalled != l.stalled || v.Reattach != l.reattach || v.AskDepth != l.askDepth {
					t.Fatalf("at %gs: stalled %v reattach %v askDepth %v; want %v %v %v (why %q)",
						l.at, v.Stalled, v.Reattach, v.AskDepth, l.stalled, l.reattach, l.askDepth, v.Why)
				}
				if (l.log == "") != (v.Log == "") || !strings.Contains(v.Log, l.log) {
					t.Fatalf("at %gs: log %q; want one with %q", l.at, v.Log, l.log)
				}
				if v.Stalled && v.Why == "" {
					t.Fatalf("at %gs: stalled without saying why", l.at)
				}
			}
		})
	}
}

func TestStallEvery(t *testing.T) {
	for after, want := range map[time.Duration]time.Duration{
		time.Minute: 10 * time.Second, 10 * time.Minute: 10 * time.Second, 3 * time.Second: 500 * time.Millisecond, 100 * time.Millisecond: 100 * time.Millisecond,
	} {
		if got := stallEvery(after); got != want {
			t.Errorf("stallEvery(%s) = %s, want %s", after, got, want)
		}
	}
}

// Only an attached route turns Stalled; leaving Stalled gives an
// Operational route its path detail back.
func TestSetStalled(t *testing.T) {
	s := &runState{state: StateWaiting}
	s.setStalled(true, "stuck")
	if s.state != StateWaiting {
		t.Fatalf("a Waiting route turned %s", s.state)
	}
	s.setState(StateOperational, nil, 0)
	s.setDetail("multi-hop via a > b")
	s.setStalled(true, "stuck")
	var st Status
	s.fill(&st)
	if st.State != StateStalled || st.Detail != "stuck" {
		t.Fatalf("%s %q, want Stalled stuck", st.State, st.Detail)
	}
	s.setStalled(false, "")
	s.fill(&st)
	if st.State != StateOperational || st.Detail != "multi-hop via a > b" {
		t.Fatalf("%s %q, want Operational with its path again", st.State, st.Detail)
	}
	s.setState(StateWaiting, nil, 0)
	s.setStalled(false, "")
	if s.state != StateWaiting {
		t.Fatalf("leaving Stalled turned a Waiting route %s", s.state)
	}
}
