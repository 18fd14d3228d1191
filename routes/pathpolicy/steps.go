package pathpolicy

import (
	"fmt"
	"strings"
	"time"
)

// Corrective action when a route's destination cannot be reached: a chain
// of steps, each for a time, the last for good. "reroute", first if at
// all, sends over the best live alternative path through other brokers
// (multi-hop transit) while the table has one; the steps after
// it apply when there is none. "hold" (the default)
// takes no more messages — they stay at the source, durable — until the
// destination is back; "dead-letter" sends each to the route's
// dead_letter_queue on the source with the reason no-path; "reject"
// rejects each at the source with condition fed:no-path, so the source
// broker's own dead-lettering applies. Example: [hold 10m, dead-letter].

// The steps' actions, as written.
const (
	StepHold       = "hold"
	StepDeadLetter = "dead-letter"
	StepReject     = "reject"
	StepReroute    = "reroute"
)

// Step is one step of the chain: an action, for a time (0: for good).
type Step struct {
	Action string
	For    time.Duration
}

// Parse reads the chain (a route's no_path, the router's default), steps
// written "hold", "hold 10m", "dead-letter",
// "reject".
func Parse(steps []string) ([]Step, error) {
	out := make([]Step, 0, len(steps))
	for i, s := range steps {
		f := strings.Fields(s)
		if len(f) == 0 || len(f) > 2 {
			return nil, fmt.Errorf("no_path step %d %q: want an action and an optional duration, e.g. \"hold 10m\"", i+1, s)
		}
		st := Step{Action: f[0]}
		switch st.Action {
		case StepHold, StepDeadLetter, StepReject:
		case StepReroute:
			if i > 0 || len(f) > 1 {
				return nil, fmt.Errorf("no_path step %d %q: reroute comes first and takes no duration (it lasts while an alternative path exists; the steps after it apply when none does)", i+1, s)
			}
			out = append(out, st)
			continue
		default:
			return nil, fmt.Errorf("no_path step %d: action %q: want reroute, hold, dead-letter or reject", i+1, f[0])
		}
		if len(f) == 2 {
			d, err := time.ParseDuration(f[1])
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("no_path step %d: %q is not a positive duration", i+1, f[1])
			}
			st.For = d
		}
		if st.For == 0 && i < len(steps)-1 {
			return nil, fmt.Errorf("no_path step %d %q lasts for good: the steps after it would never run (give it a duration)", i+1, s)
		}
		out = append(out, st)
	}
	return out, nil
}

// Rerouting says whether the chain starts with reroute.
func Rerouting(steps []Step) bool {
	return len(steps) > 0 && steps[0].Action == StepReroute
}

// due is the action due after the path has been gone for d, and
// how long until the next step (0: none). A leading reroute is not among
// them: it applies while an alternative path exists, these when none does.
func due(steps []Step, d time.Duration) (string, time.Duration) {
	if Rerouting(steps) {
		steps = steps[1:]
	}
	for _, s := range steps {
		if s.For == 0 || d < s.For {
			left := time.Duration(0)
			if s.For > 0 {
				left = s.For - d
			}
			return s.Action, left
		}
		d -= s.For
	}
	return StepHold, 0 // a chain ending on a timed step holds after it
}
