package router

import (
	"fmt"
	"time"

	"github.com/fedrouter/fedrouter/topology"
)

// What the control transport lets in (issue 17, finding 4). Anyone who can
// publish on a control address can send anything there; a message is
// checked (topology.Decode) in the receive goroutine of its broker, before
// it takes any room, and only a verified advertisement is queued, in its
// router's slot. Everything dropped is counted by reason (Stats, the
// fedrouter_control_dropped_total metric) and reported in the log at most
// once per reason and LogEvery, with the count: a flood of junk costs a
// few log lines, not one per message.

// admit checks one received message and queues it if it is a verified
// advertisement.
func (c *Control) admit(broker string, data []byte, now time.Time) {
	l, err := topology.Decode(data, c.secret)
	if err != nil {
		reason := topology.Reason(err)
		c.count(reason)
		c.report(reason, broker, err, now)
		return
	}
	c.inMu.Lock()
	res := c.inbox.Offer(topology.Received{Origin: l.Origin(), Data: data, From: broker})
	switch res {
	case topology.Replaced, topology.Older:
		c.dropped[DropCoalesced]++
	case topology.Full:
		c.dropped[DropInboxFull]++
	}
	c.inMu.Unlock()
	switch res {
	case topology.Queued, topology.Replaced:
		c.signal()
	case topology.Full:
		c.report(DropInboxFull, broker, fmt.Errorf("router %s: %d routers' advertisements are waiting already", l.Router, c.opts.Inbox), now)
	}
}

func (c *Control) count(reason string) { c.countN(reason, 1) }

func (c *Control) countN(reason string, n uint64) {
	c.inMu.Lock()
	c.dropped[reason] += n
	c.inMu.Unlock()
}

// report logs a drop if its reason has not been reported within LogEvery;
// otherwise the drop waits, counted, for ReportDrops.
func (c *Control) report(reason, broker string, err error, now time.Time) {
	if !c.limit.Allow(reason, now) {
		return
	}
	c.opts.Log.Warn().Str("broker", broker).Str("reason", reason).Err(err).Dur("report_every", c.opts.LogEvery).
		Msg("control message dropped; further drops for this reason are counted and reported at most once per interval")
}

// ReportDrops logs, for each reason, the drops counted since its last
// report once LogEvery has passed. The driver calls it periodically, so
// that the counts of a flood that stopped are reported too.
func (c *Control) ReportDrops(now time.Time) {
	for _, s := range c.limit.Due(now) {
		c.opts.Log.Warn().Str("reason", s.Key).Uint64("dropped", s.Count).Dur("over", s.Over).
			Msg("control messages dropped")
	}
}
