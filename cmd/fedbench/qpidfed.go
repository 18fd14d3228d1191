package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// vQpidFed is qpidd's own federation on the qpidd pair, set up as
// `qpid-route queue add DEST SRC DEST_EXCHANGE SRC_QUEUE` would (a pull
// route): through QMF on the destination broker, a link object to the
// source (AMQP 0-10 over TCP, SASL ANONYMOUS, not durable), then per route
// a bridge object from the source queue to the destination exchange.
// Unlike qpid-route's default (no acknowledgements: a message leaves the
// source queue when it is sent), each bridge acknowledges in batches of
// up to credit/2 messages (ackInterval) with credit messages outstanding,
// so it is at-least-once with the same window as a route.
const vQpidFed = "qpidd federation"

// linkProps are the QMF create properties of a link to src.
func linkProps(src broker) (map[string]any, error) {
	host, p, err := net.SplitHostPort(src.hostPort())
	if err != nil {
		return nil, fmt.Errorf("link to %s: %w", src.Name, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("link to %s: port %q: %w", src.Name, p, err)
	}
	return map[string]any{"host": host, "port": uint16(port), "transport": "tcp",
		"authMechanism": "ANONYMOUS", "durable": false}, nil
}

// bridgeProps are the QMF create properties of a queue route over link
// from queue srcQ to exchange dstX: acknowledged every ack messages
// ("sync", qpid-route --ack), credit messages outstanding (--credit).
func bridgeProps(link, srcQ, dstX string, credit, ack int) map[string]any {
	return map[string]any{"link": link, "src": srcQ, "dest": dstX, "key": "",
		"srcIsQueue": true, "srcIsLocal": false, "dynamic": false, "durable": false,
		"sync": uint16(ack), "credit": uint32(credit)}
}

// ackInterval is the bridge's acknowledgement interval for a route's
// share of per messages: the largest divisor of per up to credit/2.
// qpidd acknowledges a bridge's messages only in whole intervals: a tail
// shorter than one stays unacknowledged at the source while the bridge
// runs (seen: 125 of 625 with an interval of 250), and is released to be
// sent again when the bridge goes.
func ackInterval(per, credit int) int {
	for a := max(1, credit/2); a > 1; a-- {
		if per%a == 0 {
			return a
		}
	}
	return 1
}

// runQpidFed creates the link and waits until it is connected (not
// timed: fedrouter's connections are up before its clock starts too),
// then creates the bridges; timed from the first bridge's creation until
// a QMF count finds every destination queue holding its share. Then it
// deletes the bridges and the link. The federation runs inside the
// brokers: its CPU is theirs.
func (b *bench) runQpidFed(ctx context.Context, o runObjs, s *sample) error {
	m := o.pair.Dst.qmf
	props, err := linkProps(o.pair.Src)
	if err != nil {
		return err
	}
	if err := m.Create(ctx, "link", o.link, props); err != nil {
		return err
	}
	if err := poll(ctx, b.opt.Poll, 30*time.Second, func() (bool, error) { return linkUp(ctx, o) }); err != nil {
		return fmt.Errorf("qpidd link %s from %s to %s: %w", o.link, o.pair.Dst.Name, o.pair.Src.Name, err)
	}
	meter, err := startCPU(b.brokerPIDs(o.pair)...)
	if err != nil {
		return err
	}
	ack := ackInterval(o.per, b.opt.Credit)
	t0 := time.Now()
	for k := range o.srcQ {
		if err := m.Create(ctx, "bridge", o.shovs[k], bridgeProps(o.link, o.srcQ[k], o.dstX[k], b.opt.Credit, ack)); err != nil {
			return err
		}
	}
	err = poll(ctx, b.opt.Poll, b.timeout(o.per*len(o.srcQ)), func() (bool, error) {
		return queuesHold(ctx, o)
	})
	if err != nil {
		return fmt.Errorf("qpidd federation: %w", err)
	}
	s.Seconds = time.Since(t0).Seconds()
	cpu, err := meter.stop()
	if err != nil {
		return err
	}
	s.BrokerCPU = cpu[0] + cpu[1]
	return deleteFederation(ctx, o)
}

// linkUp says whether the run's link is Operational on the destination.
func linkUp(ctx context.Context, o runObjs) (bool, error) {
	links, err := o.pair.Dst.qmf.Objects(ctx, "link")
	if err != nil {
		return false, err
	}
	for _, l := range links {
		if l.String("name") == o.link {
			return l.String("state") == "Operational", nil
		}
	}
	return false, fmt.Errorf("link %s is gone", o.link)
}

// queuesHold says whether every destination queue of the run holds its
// share, from one QMF query of the destination's queues (~2 ms here).
func queuesHold(ctx context.Context, o runObjs) (bool, error) {
	d, err := depths(ctx, o.pair.Dst)
	return err == nil && len(holding(d, o.dstQ, o.per)) == 0, err
}

// deleteFederation deletes the run's bridges, then its link (none is an
// error if already gone).
func deleteFederation(ctx context.Context, o runObjs) error {
	if o.link == "" {
		return nil
	}
	var errs []error
	for _, br := range o.shovs {
		errs = append(errs, o.pair.Dst.qmf.Delete(ctx, "bridge", br))
	}
	errs = append(errs, o.pair.Dst.qmf.Delete(ctx, "link", o.link))
	return errors.Join(errs...)
}
