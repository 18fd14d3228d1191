package routes

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

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
func (r *route) runNoPath(ctx context.Context, action pathpolicy.Action) error {
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
	if action == pathpolicy.ActDeadLetter {
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
