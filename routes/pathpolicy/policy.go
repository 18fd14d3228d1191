// Package pathpolicy is a route's path policy: what a route does about its
// path at one moment. It is pure — no I/O, no goroutine, no clock — and
// golden-tested (testdata/*.txt); package routes observes, decides and
// carries the decisions out (routes/routepath.go).
package pathpolicy

import (
	"fmt"
	"time"
)

// The path policy: what a route does about its path at one moment —
// forward (directly, through transit, fanning out), wait, hold, or take
// corrective action when its destination cannot be reached (reroute, then
// hold, dead-letter or reject, chained and timed; steps.go parses the
// chain: steps.go). It is a pure function in the style of topology/: an observation
// of the route's brokers and of the link-state table, the state carried
// from the last decision, and `now` in; a typed decision and the next
// state out. It does no I/O, starts nothing and reads no clock: the
// route's goroutine (route.go) observes, decides, and carries the decision
// out. Golden tests: testdata/*.txt (policy_test.go).

// Path is how a route goes: the one word for it. A route's Mode (how it
// goes when all is well, fixed for its life) and a decision's Path (how
// one run goes) are both Paths.
type Path int

const (
	// None: no path (a decision other than forward).
	None Path = iota
	// Direct: the destination is one of this router's brokers.
	Direct
	// Transit: through other brokers' transit queues — a destination this
	// router is not attached to, or a direct route that reroutes.
	Transit
	// Fanout: an exchange route whose messages are copied at the source
	// to every broker the group reaches.
	Fanout
)

func (p Path) String() string {
	switch p {
	case None:
		return "none"
	case Direct:
		return "direct"
	case Transit:
		return "transit"
	case Fanout:
		return "fanout"
	}
	return fmt.Sprintf("Path(%d)", int(p))
}

// Policy is what a route's decisions depend on besides observations:
// set once when the route is made.
type Policy struct {
	Src, Dest string
	Mode      Path // Direct, Transit or Fanout
	// Steps is the corrective action chain (Parse); empty holds.
	Steps []Step
	// Table says whether link-state flooding is on: without it there is no
	// transit, so no reroute.
	Table bool
	// Started and Grace: until Started+Grace the table is still filling
	// with the other routers' advertisements, and a path it does not have
	// yet is not "no path".
	Started time.Time
	Grace   time.Duration
	// DeadLetterQueue names the route's dead-letter queue, for the detail.
	DeadLetterQueue string
}

// Obs is what a route sees of its path at one moment.
type Obs struct {
	SrcUp     bool
	SrcState  string // the source connection's state, when not up
	DestUp    bool   // the attached destination's connection (Direct)
	DestState string // its state, when not up
	// TablePath says whether the link-state table has a path from Src to
	// Dest (through transit).
	TablePath bool
}

// State is what a route carries from one decision to the next.
type State struct {
	// Lost is when the destination was first seen unreachable while the
	// source was up; zero while it is reachable (or unknown).
	Lost time.Time
	// Logged is the corrective action last reported (Decision.Report):
	// each change is reported once.
	Logged string
}

// Action is what a decision asks the route to do.
type Action int

const (
	// ActForward: run the route's links on Decision.Path.
	ActForward Action = iota
	// ActWait: nothing to do until something changes (the source is down,
	// or the table is still filling); no no-path clock runs.
	ActWait
	// ActHold: the destination is unreachable; take nothing, the messages
	// stay at the source.
	ActHold
	// ActDeadLetter: send what the source has to the route's dead-letter
	// queue on the source broker, with the reason no-path.
	ActDeadLetter
	// ActReject: reject what the source has with links.CondNoPath.
	ActReject
)

// condNoPath is links.CondNoPath, named in ActReject's detail. This
// package does not import links: it is a leaf, the vocabulary of a
// route's no_path (routespec) that API clients import. condition_test.go
// holds the two equal.
const condNoPath = "fed:no-path"

var actionNames = [...]string{"forward", "wait", StepHold, StepDeadLetter, StepReject}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decision is the policy's answer.
type Decision struct {
	Action Action
	// Path is how to forward (ActForward only).
	Path Path
	// Why says what the route waits for or why it corrects; "" when it
	// forwards.
	Why string
	// Detail is the route's detail for route list while it does not
	// forward.
	Detail string
	// Timer: decide again after this long even if nothing changes (the
	// table's grace ends, the chain's next step is due); 0: only on change.
	Timer time.Duration
	// Report is set when the corrective action changed since the last one
	// reported (hold, dead-letter, reject): log it once, with Why.
	Report string
}

// minTimer is the shortest Timer a decision asks for: a deadline just
// passed still gets a moment, so the caller looks again.
const minTimer = 10 * time.Millisecond

// Decide is the path policy. It is deterministic: the same policy,
// observation, state and now give the same decision and next state.
func Decide(p Policy, obs Obs, st State, now time.Time) (Decision, State) {
	settled := !now.Before(p.Started.Add(p.Grace))
	graceLeft := max(minTimer, p.Started.Add(p.Grace).Sub(now))
	if !obs.SrcUp {
		st.Lost = time.Time{}
		why := fmt.Sprintf("broker %s is %s", p.Src, obs.SrcState)
		return Decision{Action: ActWait, Why: why, Detail: why}, st
	}
	if p.Mode == Fanout {
		if !settled {
			// Copied to what the group reaches as known now, a message
			// would miss the brokers of routes not advertised to us yet.
			why := "the link-state table is still filling (the other routers' exchange routes): holding at the source"
			st.Lost = time.Time{}
			return Decision{Action: ActWait, Why: why, Detail: why, Timer: graceLeft}, st
		}
		return forward(Fanout, st)
	}
	why := fmt.Sprintf("no path to broker %s", p.Dest)
	if p.Mode == Direct {
		if obs.DestUp {
			return forward(Direct, st)
		}
		why = fmt.Sprintf("no path to broker %s (%s)", p.Dest, obs.DestState)
	}
	if p.Table && (p.Mode == Transit || Rerouting(p.Steps)) {
		if obs.TablePath {
			return forward(Transit, st)
		}
		if !settled {
			// Just started: the other routers' advertisements are still
			// coming in. No path yet is not "no path": hold.
			st.Lost = time.Time{}
			why += ": the link-state table is still filling; holding at the source"
			return Decision{Action: ActWait, Why: why, Detail: why, Timer: graceLeft}, st
		}
		if p.Mode == Direct {
			why += " and no alternative path"
		} else {
			why += " in the link-state table"
		}
	}
	return correct(p, why, st, now)
}

// forward is the decision to run on path; the no-path clock stops, and
// the next loss reports its action afresh.
func forward(path Path, st State) (Decision, State) {
	st.Lost, st.Logged = time.Time{}, ""
	return Decision{Action: ActForward, Path: path}, st
}

// correct is the decision while the destination is unreachable: the step
// of the chain due by how long it has been so.
func correct(p Policy, why string, st State, now time.Time) (Decision, State) {
	if st.Lost.IsZero() {
		st.Lost = now
	}
	action, left := due(p.Steps, now.Sub(st.Lost))
	d := Decision{Why: why}
	if action != st.Logged {
		d.Report, st.Logged = action, action
	}
	if left > 0 {
		d.Timer = max(minTimer, left)
	}
	switch action {
	case StepDeadLetter:
		d.Action, d.Detail = ActDeadLetter, why+": dead-lettering to "+p.DeadLetterQueue
	case StepReject:
		d.Action, d.Detail = ActReject, why+": rejecting at the source with "+condNoPath
	default:
		d.Action, d.Detail = ActHold, why+": holding at the source"
		if left > 0 {
			d.Detail += fmt.Sprintf(", next action in %s", left.Round(time.Second))
		}
	}
	return d, st
}

// Same says whether two decisions ask for the same thing to be carried
// out: a run or a correction goes on while the decisions stay the same.
func (d Decision) Same(o Decision) bool {
	return d.Action == o.Action && d.Path == o.Path
}
