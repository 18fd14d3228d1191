package routes

import (
	"context"
	"errors"
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

// noPathEngineDetail ends the detail of a no-path run on the engine.
const noPathEngineDetail = "on the engine data path"

// runNoPath carries out d's action (dead-letter or reject) on the
// source's messages until ctx ends (the destination is back, or the
// route stops): on the engine when the router's data path is, unless the
// source's link is not for it (amqp.ErrEngineUnsupported), else on
// go-amqp.
func (r *route) runNoPath(ctx context.Context, d pathpolicy.Decision) error {
	reason := fmt.Sprintf("no-path: no path to broker %s", r.spec.Dest)
	if r.m.opts.DataPath == DataPathEngine {
		err := r.runNoPathEngine(ctx, d, reason)
		if !errors.Is(err, amqp.ErrEngineUnsupported) {
			return err
		}
		r.log.Debug().Err(err).Msg("this route's source is not for the engine: no-path run on go-amqp")
	}
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
	cfg := links.Config{Window: r.spec.Credit, OutcomeTimeout: r.spec.OutcomeTimeout}
	if d.Action == pathpolicy.ActDeadLetter {
		if cfg.DeadLetter, err = r.deadLetterSink(setup, sess); err != nil {
			return err
		}
		cfg.DeadLetterAnnotations = r.noPathAnnotations()
	}
	rcv, err := amqp.NewReceiver(setup, sess, spec, amqp.ReceiverConfig{Window: max(1, r.spec.Credit/2), MaxUnsettled: r.spec.Credit})
	if err != nil {
		return fmt.Errorf("attach receiver on %s: %w", r.spec.Src, err)
	}
	return links.Forward(ctx, rcv, noPathSink{reason: reason, count: &r.noPath}, cfg, &r.cNoPath)
}

// runNoPathEngine is runNoPath on the engine: a forwarder with no
// destination, refusing every message with fed:no-path
// (links.EngineRefuseAll): dead-lettered to the route's dead-letter
// queue, accepted at the source only once that queue accepted it, or
// rejected at the source; counted as on go-amqp.
func (r *route) runNoPathEngine(ctx context.Context, d pathpolicy.Decision, reason string) error {
	setup, cancel := context.WithTimeout(ctx, r.m.opts.SetupTimeout)
	defer cancel()
	spec, err := r.mode.source(setup)
	if err != nil {
		return err
	}
	var l links.EngineLinks
	if l.Source, err = spec.EngineReceiver(r.src.Profile); err != nil {
		return err
	}
	cfg := links.Config{Window: r.spec.Credit, OutcomeTimeout: r.spec.OutcomeTimeout}
	if d.Action == pathpolicy.ActDeadLetter {
		if l.DeadLetter, err = r.engineDeadLetterQueue(setup); err != nil {
			return err
		}
		cfg.DeadLetterAnnotations = r.noPathAnnotations()
	}
	l.Dispatch = links.EngineRefuseAll(links.CondNoPath, reason, &r.noPath)
	if l.Src, err = engineSession(setup, r.src.Conn); err != nil {
		return err
	}
	defer endSessions(l.Src)
	fw, err := links.AttachEngine(setup, l, cfg, r.spec.Ack)
	if err != nil {
		return fmt.Errorf("no-path %s on %s on the engine: %w", d.Action, r.spec.Src, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), engineClose) // ctx is over by now: close anyway
		defer cancel()
		fw.Close(cctx)
	}()
	r.state.setWaiting(d.Detail + "; " + noPathEngineDetail)
	return fw.Run(ctx, cfg, &r.cNoPath)
}

// noPathAnnotations are what a message dead-lettered for want of a path
// says of the route and of where it was going, besides the reason.
func (r *route) noPathAnnotations() map[string]string {
	_, _, dst := r.nodes() // what the message was for
	return map[string]string{links.AnnotationRoute: r.id + " " + r.spec.String(),
		links.AnnotationDestBroker: r.spec.Dest, links.AnnotationDestAddress: dst.Address()}
}

// Annotations on a message dead-lettered for want of a path.
const (
	AnnotationDestBroker  = "x-fedrouter-dest-broker"
	AnnotationDestAddress = "x-fedrouter-dest-address"
)
