package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// vTransitEngine: a message crossing two routers (docs/multihop.md),
// both on data_path engine. Router A is attached to the pair's source
// and destination (rabbit1, rabbit2), router B to the destination and a
// third node (rabbit2, rabbit3); both flood link state. Each route is a
// queue route on A from rabbit1's queue to an exchange on rabbit3, which
// A is not attached to: A writes each message into rabbit1's transit
// queue for rabbit3, A's transit forwarder carries it to rabbit2's, and
// B's from there into the exchange on rabbit3 — three forwards, two
// routers, two broker hops. Each run checks that every one of those
// forwarders ran on the engine (transitpath.go).
const vTransitEngine = "fedrouter transit engine"

// transitFar is the harness node the transit variant delivers to.
const transitFar = "rabbit3"

// meshBroker is b as the transit routers name it: under the run's
// prefix, so that the transit queues they create (fedrouter.transit.NAME)
// and the control node are the run's alone — no other router on these
// nodes consumes them, and the clean-up finds them.
func (b *bench) meshBroker(br broker) broker {
	br.Name = b.id + "." + br.Name
	return br
}

// transitControl is the run's control node (an exchange and one inbox
// queue per router) for the variants that flood link state: named
// fedbench, so the sweep removes it, and no other router on these nodes
// hears the bench's advertisements.
func (b *bench) transitControl() string { return b.id + ".control" }

// runTransit starts the two routers, waits until each holds the other's
// advertisement (the path from source to destination is in both tables),
// then adds the routes on A. Timed from the first add to the poll that
// sees B's transit forwarder on rabbit2 deliver every message to rabbit3
// (accepted there, settled at rabbit2); CPU is both routers' (ProcCPU
// their sum, RouterCPU each) and the three nodes'.
func (b *bench) runTransit(ctx context.Context, o runObjs, s *sample) error {
	src, via, dst := b.meshBroker(o.pair.Src), b.meshBroker(o.via), b.meshBroker(o.pair.Dst)
	specs := []routerSpec{
		{ID: routerA, Brokers: []broker{src, via}, Links: [][2]string{{src.Name, via.Name}}},
		{ID: routerB, Brokers: []broker{via, dst}, Links: [][2]string{{via.Name, dst.Name}}},
	}
	var rps []*routerProc
	defer func() {
		for _, rp := range rps {
			rp.stop()
			_ = os.RemoveAll(rp.dir) // a temporary directory: best effort
		}
	}()
	for _, rs := range specs {
		dir, err := os.MkdirTemp(b.opt.Tmp, "fedbench-transit-")
		if err != nil {
			return err
		}
		rs.Conns, rs.Flooding, rs.Control, rs.DataPath = b.conns(o), true, b.transitControl(), routes.DataPathEngine
		rp, err := startRouterSpec(ctx, b.opt.Fedrouter, dir, rs)
		if err != nil {
			_ = os.RemoveAll(dir) // nothing started there
			return err
		}
		rps = append(rps, rp)
	}
	ra, rb := rps[0], rps[1]
	err := poll(ctx, b.opt.Poll, time.Minute, func() (bool, error) {
		okA, err := hasPath(ctx, ra, src.Name, dst.Name)
		if err != nil || !okA {
			return false, err
		}
		return hasPath(ctx, rb, src.Name, dst.Name)
	})
	if err != nil {
		return fmt.Errorf("fedrouter transit: no path %s > %s (logs %s, %s): %w", src.Name, dst.Name, ra.log, rb.log, err)
	}
	meter, err := startCPU(ra.pid(), rb.pid(), o.pair.Src.PID, o.via.PID, o.pair.Dst.PID)
	if err != nil {
		return err
	}
	t0 := time.Now()
	ids, err := b.addQueueRoutes(ctx, ra, o, src.Name, dst.Name, 0)
	if err != nil {
		return err
	}
	want := uint64(o.per * len(o.srcQ))
	err = poll(ctx, b.opt.Poll, b.timeout(int(want)), func() (bool, error) {
		n, err := ra.forwarded(ctx, ids) // fails at once if a route failed
		if err != nil || n < want {
			return false, err
		}
		delivered, err := rb.transitDelivered(ctx, dst.Name)
		return delivered >= want, err
	})
	if err != nil {
		return fmt.Errorf("fedrouter transit (logs %s, %s): %w", ra.log, rb.log, err)
	}
	s.Seconds = time.Since(t0).Seconds()
	cpu, err := meter.stop()
	if err != nil {
		return err
	}
	s.RouterCPU = cpu[:2]
	s.ProcCPU, s.BrokerCPU = cpu[0]+cpu[1], cpu[2]+cpu[3]+cpu[4]
	for _, rp := range rps {
		_, hwm, err := memKiB(rp.pid())
		if err != nil {
			return err
		}
		s.PeakRSS = max(s.PeakRSS, hwm)
	}
	hops, err := b.transitWay(ctx, ra, rb, ids, dst.Name)
	if err != nil {
		return fmt.Errorf("fedrouter transit (logs %s, %s): %w", ra.log, rb.log, err)
	}
	for _, h := range hops {
		s.DataPaths = append(s.DataPaths, h.String())
	}
	return checkHops(hops)
}

// transitWay reads what each forwarder on a transit run's way ran on: A's
// routes ids and both routers' transit forwarders that carried messages
// to dest.
func (b *bench) transitWay(ctx context.Context, ra, rb *routerProc, ids map[string]bool, dest string) ([]transitHop, error) {
	sts, err := ra.statuses(ctx, ids)
	if err != nil {
		return nil, err
	}
	llA, err := ra.links(ctx)
	if err != nil {
		return nil, err
	}
	llB, err := rb.links(ctx)
	if err != nil {
		return nil, err
	}
	return wayHops(sts, llA, llB, dest)
}

// hasPath says whether rp's link-state table holds a path from one broker
// to another.
func hasPath(ctx context.Context, rp *routerProc, from, to string) (bool, error) {
	snap, err := rp.api.Topology(ctx)
	if err != nil {
		return false, err
	}
	i := slices.IndexFunc(snap.Routes, func(br topology.BrokerRoutes) bool { return br.Broker == from })
	return i >= 0 && slices.ContainsFunc(snap.Routes[i].Routes, func(r topology.RouteView) bool { return r.Dest == to }), nil
}

// transitCleanup checks that the run's transit queues on the three nodes
// are empty and removes them, with the router dead-letter queue where the
// run created it (deadLetterBefore: the nodes that had one before) and it
// is empty; it returns what was wrong. A message left in transit or
// dead-lettered is a failed run.
func (b *bench) transitCleanup(ctx context.Context, o runObjs) []string {
	var problems []string
	for _, br := range []broker{o.pair.Src, o.via, o.pair.Dst} {
		m := br.mgmt
		names, err := m.QueueNames(ctx)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, q := range names {
			mine := strings.HasPrefix(q, links.TransitPrefix+b.id+".")
			if !mine && (q != links.RouterDeadLetterQueue || o.deadLetterBefore[br.Name]) {
				continue
			}
			if err := waitQueueMessages(ctx, m, q, 0, 20*time.Second); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", br.Name, err))
				if !mine {
					continue // dead-lettered messages: left for a look
				}
			}
			if err := m.DeleteQueue(ctx, q); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	return problems
}

// noteDeadLetters records which of the transit nodes already hold the
// router dead-letter queue, which the run's forwarders create where it
// is missing: the clean-up removes only those it created.
func (b *bench) noteDeadLetters(ctx context.Context, o *runObjs) error {
	o.deadLetterBefore = map[string]bool{}
	for _, br := range []broker{o.pair.Src, o.via, o.pair.Dst} {
		names, err := br.mgmt.QueueNames(ctx)
		if err != nil {
			return err
		}
		o.deadLetterBefore[br.Name] = slices.Contains(names, links.RouterDeadLetterQueue)
	}
	return nil
}
