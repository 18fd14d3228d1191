package main

import (
	"context"
	"sync"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
)

// consumer receives from one queue of the destination broker, accepts
// every message and counts each id's deliveries. It re-attaches on its own
// after the broker is killed and restarted.
type consumer struct {
	conn   *famqp.Conn // to the destination broker directly
	addr   string
	runID  string
	n      int
	window int

	mu       sync.Mutex
	per      []uint16  // guarded by mu: deliveries per sequence number
	total    int       // guarded by mu
	distinct int       // guarded by mu
	foreign  int       // guarded by mu: not a message of this run
	lastAt   time.Time // guarded by mu: the last delivery
	reattach int       // guarded by mu: links attached again after a failure
	lastErr  error     // guarded by mu
}

func newConsumer(conn *famqp.Conn, addr, run string, n, window int) *consumer {
	return &consumer{conn: conn, addr: addr, runID: run, n: n, window: window, per: make([]uint16, n)}
}

// counts is a snapshot of what a consumer received.
type counts struct {
	Total       int // deliveries
	Distinct    int // distinct ids of this run
	Duplicates  int // Total - Foreign - Distinct
	Foreign     int // not of this run, or with a changed message-id
	Reattached  int
	LastAt      time.Time
	Missing     []int // sequence numbers never received: the first few
	MissingSeqs int   // how many
}

// snapshot counts; with missing, it also looks for ids not received.
func (c *consumer) snapshot(missing bool) counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := counts{Total: c.total, Distinct: c.distinct, Foreign: c.foreign, Reattached: c.reattach, LastAt: c.lastAt}
	k.Duplicates = c.total - c.foreign - c.distinct
	if missing {
		for seq, n := range c.per {
			if n == 0 {
				k.MissingSeqs++
				if len(k.Missing) < 10 {
					k.Missing = append(k.Missing, seq)
				}
			}
		}
	}
	return k
}

// record counts one delivery; seq < 0 is a foreign message.
func (c *consumer) record(seq int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	c.lastAt = time.Now()
	if seq < 0 || seq >= c.n {
		c.foreign++
		return
	}
	if c.per[seq] == 0 {
		c.distinct++
	}
	if c.per[seq] < ^uint16(0) {
		c.per[seq]++
	}
}

// identify returns the sequence number of a message of this run whose
// message-id crossed unchanged, or -1.
func (c *consumer) identify(msg *goamqp.Message) int {
	if run, _ := msg.ApplicationProperties["chaos_run"].(string); run != c.runID {
		return -1
	}
	seq, ok := msg.ApplicationProperties["seq"].(int64)
	if !ok || msg.Properties == nil {
		return -1
	}
	if id, _ := msg.Properties.MessageID.(string); id != messageID(c.runID, int(seq)) {
		return -1
	}
	return int(seq)
}

// run receives until ctx ends.
func (c *consumer) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := c.receive(ctx)
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		c.reattach++
		c.lastErr = err
		c.mu.Unlock()
		if !pause(ctx, 100*time.Millisecond) {
			return
		}
	}
}

// receive attaches on a session of its own and receives until the link
// fails; the session is ended on return, handing unsettled messages back.
func (c *consumer) receive(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sess, gen, err := c.conn.NewSession(actx)
	if err != nil {
		cancel()
		return err
	}
	defer famqp.CloseSession(sess)
	r, err := famqp.NewReceiver(actx, sess, famqp.LinkSpec{Address: c.addr}, famqp.ReceiverConfig{Window: c.window})
	cancel()
	if err != nil {
		c.conn.ReportBroken(gen, err)
		return err
	}
	for {
		msg, err := r.Receive(ctx)
		if err != nil {
			c.conn.ReportBroken(gen, err)
			return err
		}
		// Counted when received, before the accept: a message seen twice
		// because an accept was lost is a duplicate the consumer saw.
		c.record(c.identify(msg.GoAMQP()))
		if err := r.Accept(ctx, msg); err != nil {
			c.conn.ReportBroken(gen, err)
			return err
		}
	}
}
