package routes

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
)

// Corrective action when a route's destination cannot be reached: a chain
// of steps, each for a time, the last for good. "reroute", first if at
// all, sends over the best live alternative path through other brokers
// (multi-hop transit, transit.go) while the table has one; the steps after
// it apply when there is none. "hold" (the default)
// takes no more messages — they stay at the source, durable — until the
// destination is back; "dead-letter" sends each to the route's
// dead_letter_queue on the source with the reason no-path; "reject"
// rejects each at the source with condition fed:no-path, so the source
// broker's own dead-lettering applies. Example: [hold 10m, dead-letter].

// No-path actions.
const (
	NoPathHold       = "hold"
	NoPathDeadLetter = "dead-letter"
	NoPathReject     = "reject"
	NoPathReroute    = "reroute"
)

// NoPathStep is one step of the chain: an action, for a time (0: for good).
type NoPathStep struct {
	Action string
	For    time.Duration
}

// ParseNoPath reads steps written "hold", "hold 10m", "dead-letter",
// "reject".
func ParseNoPath(steps []string) ([]NoPathStep, error) {
	out := make([]NoPathStep, 0, len(steps))
	for i, s := range steps {
		f := strings.Fields(s)
		if len(f) == 0 || len(f) > 2 {
			return nil, fmt.Errorf("no_path step %d %q: want an action and an optional duration, e.g. \"hold 10m\"", i+1, s)
		}
		st := NoPathStep{Action: f[0]}
		switch st.Action {
		case NoPathHold, NoPathDeadLetter, NoPathReject:
		case NoPathReroute:
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

// rerouting says whether the chain starts with reroute.
func rerouting(steps []NoPathStep) bool {
	return len(steps) > 0 && steps[0].Action == NoPathReroute
}

// noPathAction is the action due after the path has been gone for d, and
// how long until the next step (0: none). A leading reroute is not among
// them: it applies while an alternative path exists, these when none does.
func noPathAction(steps []NoPathStep, d time.Duration) (string, time.Duration) {
	if rerouting(steps) {
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
	return NoPathHold, 0 // a chain ending on a timed step holds after it
}

// noPathSink stands for the unreachable destination: it refuses every
// message with fed:no-path at once, so links.Forward applies the route's
// dead-letter or reject handling to it.
type noPathSink struct {
	reason string
	count  *atomic.Uint64
}

func (s noPathSink) Send(context.Context, amqp.Message) (links.Receipt, error) {
	s.count.Add(1)
	return links.Refusal(links.CondNoPath, s.reason), nil
}

// runNoPath applies action (dead-letter or reject) to the source's
// messages until ctx ends (the destination is back, or the route stops).
func (r *route) runNoPath(ctx context.Context, action Action) error {
	setup, cancel := context.WithTimeout(ctx, r.m.opts.SetupTimeout)
	defer cancel()
	sess, _, err := r.src.Conn.NewSession(setup)
	if err != nil {
		return err
	}
	defer amqp.CloseSession(sess)
	spec, err := r.mode.source(setup)
	if err != nil {
		return err
	}
	reason := fmt.Sprintf("no-path: no path to broker %s", r.spec.Dest)
	cfg := links.Config{Window: r.spec.Credit, OutcomeTimeout: r.spec.OutcomeTimeout}
	if action == ActDeadLetter {
		if cfg.DeadLetter, err = r.deadLetterSink(setup, sess); err != nil {
			return err
		}
		_, _, dst := r.nodes() // what the message was for
		cfg.DeadLetterAnnotations = map[string]string{links.AnnotationRoute: r.id + " " + r.spec.String(),
			links.AnnotationDestBroker: r.spec.Dest, links.AnnotationDestAddress: dst.Address()}
	}
	rcv, err := amqp.NewReceiver(setup, sess, spec, amqp.ReceiverConfig{Window: max(1, r.spec.Credit/2), MaxUnsettled: r.spec.Credit})
	if err != nil {
		return fmt.Errorf("attach receiver on %s: %w", r.spec.Src, err)
	}
	return links.Forward(ctx, rcv, noPathSink{reason: reason, count: &r.noPath}, cfg, &r.cNoPath)
}

// Annotations on a message dead-lettered for want of a path.
const (
	AnnotationDestBroker  = "x-fedrouter-dest-broker"
	AnnotationDestAddress = "x-fedrouter-dest-address"
)
