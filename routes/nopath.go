package routes

import (
	"context"
	"fmt"

	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// noPathEngineDetail ends the detail of a no-path run on the engine.
const noPathEngineDetail = "on the engine data path"

// runNoPath carries out d's action (dead-letter or reject) on the
// source's messages until ctx ends (the destination is back, or the
// route stops).
func (r *route) runNoPath(ctx context.Context, d pathpolicy.Decision) error {
	return r.runNoPathEngine(ctx, d, fmt.Sprintf("no-path: no path to broker %s", r.spec.Dest))
}

// runNoPathEngine is runNoPath on the engine: a forwarder with no
// destination, refusing every message with fed:no-path
// (links.EngineRefuseAll): dead-lettered to the route's dead-letter
// queue, accepted at the source only once that queue accepted it, or
// rejected at the source; counted in the route's no-path counters.
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
