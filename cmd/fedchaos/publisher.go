package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
)

// publisher sends messages 0..n-1 of one run to the source queue, durable,
// each with a unique id, at least once: receipts are pipelined (at most
// window waiting) and a message whose send or receipt fails is sent again
// with the same id. It sends only below the allowance the suite sets, so
// the stream is spread over the fault schedule rather than drained before
// the first fault.
type publisher struct {
	conn   *famqp.Conn // to the source broker directly, not through a proxy
	addr   string
	runID  string
	n      int
	window int

	mu      sync.Mutex
	allowed int           // guarded by mu: sequence numbers below this may be sent
	next    int           // guarded by mu: next never-sent sequence number
	retry   []int         // guarded by mu: to send again
	acked   []bool        // guarded by mu: accepted by the source broker
	nAcked  int           // guarded by mu
	retries int           // guarded by mu: sends repeated after a failure
	wake    chan struct{} // signalled (non-blocking) when any of the above changes
}

// pending is a sent message waiting for the source broker's outcome.
type pending struct {
	seq     int
	receipt goamqp.SendReceipt
}

func newPublisher(conn *famqp.Conn, addr, run string, n, window int) *publisher {
	return &publisher{conn: conn, addr: addr, runID: run, n: n, window: window,
		acked: make([]bool, n), wake: make(chan struct{}, 1)}
}

// allow lets the publisher send sequence numbers below upTo (capped at n).
func (p *publisher) allow(upTo int) {
	p.mu.Lock()
	p.allowed = max(p.allowed, min(upTo, p.n))
	p.mu.Unlock()
	p.signal()
}

func (p *publisher) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// progress returns how many were sent for the first time and how many the
// source broker accepted.
func (p *publisher) progress() (sent, acked, retries int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next, p.nAcked, p.retries
}

// run sends until every message is accepted or ctx ends. It owns one
// settle goroutine, joined before it returns.
func (p *publisher) run(ctx context.Context) error {
	receipts := make(chan pending, p.window)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.settle(ctx, receipts)
	}()
	defer wg.Wait()
	defer close(receipts)

	var sess *famqp.Session
	var snd *goamqp.Sender
	var gen uint64
	drop := func(err error) {
		p.conn.ReportBroken(gen, err)
		famqp.CloseSession(sess)
		sess, snd = nil, nil
	}
	defer func() {
		if sess != nil {
			famqp.CloseSession(sess)
		}
	}()
	for {
		seq, ok, err := p.take(ctx)
		if err != nil || !ok {
			return err
		}
		if snd == nil {
			if sess, snd, gen, err = p.attach(ctx); err != nil {
				p.requeue(seq, false)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if !pause(ctx, 200*time.Millisecond) {
					return ctx.Err()
				}
				continue
			}
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		r, err := snd.SendWithReceipt(sctx, p.message(seq), nil)
		cancel()
		if err != nil {
			p.requeue(seq, true)
			drop(err)
			continue
		}
		select {
		case receipts <- pending{seq, r}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take returns the next sequence number to send: a retry first, then the
// next new one within the allowance. ok is false once all are accepted.
func (p *publisher) take(ctx context.Context) (seq int, ok bool, err error) {
	for {
		p.mu.Lock()
		switch {
		case len(p.retry) > 0:
			seq, p.retry = p.retry[0], p.retry[1:]
			p.mu.Unlock()
			return seq, true, nil
		case p.next < p.allowed:
			seq = p.next
			p.next++
			p.mu.Unlock()
			return seq, true, nil
		case p.nAcked == p.n:
			p.mu.Unlock()
			return 0, false, nil
		}
		p.mu.Unlock()
		select {
		case <-p.wake:
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
	}
}

func (p *publisher) requeue(seq int, counted bool) {
	p.mu.Lock()
	p.retry = append(p.retry, seq)
	if counted {
		p.retries++
	}
	p.mu.Unlock()
	p.signal()
}

func (p *publisher) attach(ctx context.Context) (*famqp.Session, *goamqp.Sender, uint64, error) {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sess, gen, err := p.conn.NewSession(actx)
	if err != nil {
		return nil, nil, 0, err
	}
	// The publisher is an AMQP application: go-amqp's sender as is.
	snd, err := sess.GoAMQP().NewSender(actx, p.addr, nil)
	if err != nil {
		famqp.CloseSession(sess)
		p.conn.ReportBroken(gen, err)
		return nil, nil, 0, fmt.Errorf("attach sender %s: %w", p.addr, err)
	}
	return sess, snd, gen, nil
}

// settle waits for each receipt in send order; accepted messages are done,
// anything else (released, rejected, a lost link, no answer in 30 s) is
// sent again with the same id.
func (p *publisher) settle(ctx context.Context, receipts <-chan pending) {
	for pd := range receipts {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := pd.receipt.Wait(wctx)
		cancel()
		if _, ok := st.(*goamqp.StateAccepted); err == nil && ok {
			p.mu.Lock()
			if !p.acked[pd.seq] {
				p.acked[pd.seq] = true
				p.nAcked++
			}
			p.mu.Unlock()
			p.signal()
			continue
		}
		if ctx.Err() != nil {
			continue // shutting down: drain the channel without resending
		}
		p.requeue(pd.seq, true)
	}
}

// messageID is the id of message seq of run: unique across runs, so a
// message left over from an earlier run is recognised as foreign.
func messageID(run string, seq int) string { return fmt.Sprintf("%s-%07d", run, seq) }

// message is message seq: durable, its id in message-id and, with the
// sequence number, in the application properties; a 256-byte body.
func (p *publisher) message(seq int) *goamqp.Message {
	id := messageID(p.runID, seq)
	body := id + " " + strings.Repeat(".", max(0, 255-len(id)))
	return &goamqp.Message{
		Header:                &goamqp.MessageHeader{Durable: true},
		Properties:            &goamqp.MessageProperties{MessageID: id},
		ApplicationProperties: map[string]any{"chaos_run": p.runID, "chaos_id": id, "seq": int64(seq)},
		Data:                  [][]byte{[]byte(body)},
	}
}

// pause waits d unless ctx ends first; false if it did.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
