package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// Variants measured on every pair.
const (
	vRaw = "raw pipe"
	// vEngine is fedrouter's queue routes on its engine (data_path:
	// engine), vEngineAck the same with --ack (options.EngineAck), so
	// that the source is settled in ranges. The names are those results
	// files have had since the go-amqp data path ran beside them.
	vEngine    = "fedrouter engine"
	vEngineAck = "fedrouter engine ack"
	vShovel091 = "shovel amqp091"
	vShovel10  = "shovel amqp10"
	// vFanout: an exchange route with link-state flooding on, so fanning
	// out at the origin (docs/multihop.md): each message is taken from the
	// group's shared queue, copied into the source broker's transit queue
	// for the destination, and carried from there by a transit forwarder —
	// two forwards and one more durable write than vEngine.
	vFanout = "fedrouter fan-out"
)

// pairDef is a source and a destination broker of the same kind.
type pairDef struct {
	Name     string // as shown: "RabbitMQ->RabbitMQ"
	Src, Dst broker
	Shovel   bool // RabbitMQ: the shovel plugin is a baseline
	QpidFed  bool // qpidd: its own federation is a baseline
	// PreSettled: the source sends every message pre-settled (the Proton
	// C broker). Qpid Dispatch forwards such messages best-effort and
	// drops them when the destination is slower (measured: 1,999 of 3,000
	// dropped, and a third of the rest missing at the destination), so it
	// is not measured on such a pair.
	PreSettled bool
	// Far is a third node of the same kind (RabbitMQ: rabbit3), the
	// transit variant's destination; zero when not measured.
	Far broker
}

// caseSpec is one cell of the table: a variant on a pair with a message
// size and a number of routes (pipes, shovels) sharing the messages.
type caseSpec struct {
	Pair     string `json:"pair"`
	Size     int    `json:"size_bytes"`
	Variant  string `json:"variant"`
	Routes   int    `json:"routes"`
	Messages int    `json:"messages"`
	Ack      int    `json:"ack,omitempty"` // the routes' ack (vEngineAck)
}

func (c caseSpec) String() string {
	v := c.Variant
	if c.Ack > 0 {
		v += " " + strconv.Itoa(c.Ack)
	}
	return fmt.Sprintf("%s %s %s x%d (%d msgs)", c.Pair, sizeName(c.Size), v, c.Routes, c.Messages)
}

// sample is one measured run.
type sample struct {
	Seconds   float64 `json:"seconds"`
	Rate      float64 `json:"msgs_per_s"`
	ProcCPU   float64 `json:"process_cpu_s"` // router or pipe process; 0 for shovels
	BrokerCPU float64 `json:"broker_cpu_s"`  // source + destination broker processes
	PeakRSS   int64   `json:"peak_rss_kib"`  // router or pipe process (VmHWM); 0 for shovels
	// RouterCPU is each router's CPU seconds when a variant runs several
	// (transit: A, B); ProcCPU is their sum.
	RouterCPU []float64 `json:"router_cpu_s,omitempty"`
	Verified  string    `json:"verified"`     // "ok", or what the after-the-fact check found
	FillSecs  float64   `json:"fill_seconds"` // not timed: filling the sources before
	WaitSecs  float64   `json:"wait_seconds"` // not timed: the previous run's check after the fill
	// DataPaths: each forwarder of a transit run and the data path it
	// ran on (transitHop).
	DataPaths []string `json:"data_paths,omitempty"`
}

// runObjs are the broker objects of one run, one set per route.
type runObjs struct {
	pair  pairDef
	per   int      // messages per route
	srcQ  []string // source queues (Proton: addresses)
	dstX  []string // destination exchanges (Proton: addresses)
	dstQ  []string // destination queues bound to dstX (Proton: = dstX)
	srcX  []string // fan-out: source exchanges (named as dstX), srcQ their shared queues
	shovs []string // shovel parameter names (shovel variants); qpidd bridge names
	link  string   // qpidd federation: the link object on the destination
	// via is the node between source and destination in the transit
	// variant (pair.Dst is then pairDef.Far); zero otherwise.
	via broker
	// deadLetterBefore: the transit nodes that held the router
	// dead-letter queue before the run (transit.go).
	deadLetterBefore map[string]bool
}

// bench holds one `fedbench run`.
type bench struct {
	opt     options
	id      string // prefix of every broker object this run creates
	seq     int
	self    string // this executable, for the pipe subprocess
	pending sync.WaitGroup
}

func (b *bench) brokerPIDs(p pairDef) []int { return []int{p.Src.PID, p.Dst.PID} }

func (b *bench) objects(c caseSpec, p pairDef) runObjs {
	b.seq++
	base := fmt.Sprintf("%s.%d", b.id, b.seq)
	o := runObjs{pair: p, per: c.Messages / c.Routes}
	for k := 0; k < c.Routes; k++ {
		o.srcQ = append(o.srcQ, fmt.Sprintf("%s.q%d", base, k))
		o.dstX = append(o.dstX, fmt.Sprintf("%s.x%d", base, k))
		if p.Dst.Kind == "rabbitmq" || p.Dst.Kind == kindQpidd {
			o.dstQ = append(o.dstQ, fmt.Sprintf("%s.d%d", base, k))
		} else {
			o.dstQ = append(o.dstQ, o.dstX[k])
		}
		o.shovs = append(o.shovs, fmt.Sprintf("%s.s%d", base, k))
		if c.Variant == vFanout {
			// The route's subscription is the group's shared queue: filled
			// before the router starts, as the other variants' queues are.
			o.srcX = append(o.srcX, o.dstX[k])
			o.srcQ[k] = fanoutQueue(o.dstX[k])
		}
	}
	if c.Variant == vQpidFed {
		o.link = base + ".link"
	}
	if isTransit(c.Variant) {
		o.via, o.pair.Dst = p.Dst, p.Far
	}
	return o
}

// setup declares the run's queues and exchanges and fills the sources
// (not timed).
func (b *bench) setup(ctx context.Context, o runObjs, size int) error {
	if o.pair.Src.Kind == kindQpidd {
		if err := qpiddSetup(ctx, o); err != nil {
			return err
		}
	}
	if o.pair.Src.Kind == "rabbitmq" {
		m := o.pair.Src.mgmt
		for k, q := range o.srcQ {
			var err error
			if len(o.srcX) > 0 {
				err = declareBound(ctx, m, o.srcX[k], q, amqp.QueueArgs{Durable: true,
					Arguments: map[string]any{"x-single-active-consumer": true}})
			} else {
				err = m.DeclareQueue(ctx, q, amqp.QueueArgs{Durable: true})
			}
			if err != nil {
				return err
			}
		}
	}
	if o.pair.Dst.Kind == "rabbitmq" {
		for k := range o.dstX {
			if err := declareBound(ctx, o.pair.Dst.mgmt, o.dstX[k], o.dstQ[k], amqp.QueueArgs{Durable: true}); err != nil {
				return err
			}
		}
	}
	errs := make([]error, len(o.srcQ))
	var wg sync.WaitGroup
	for k, q := range o.srcQ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One queue filled over two links goes faster than over one;
			// several queues fill in parallel anyway.
			senders := 1
			if len(o.srcQ) == 1 {
				senders = 2
			}
			errs[k] = fill(ctx, o.pair.Src, queueAddr(o.pair.Src, q), o.per, size, senders)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// cleanup checks, after the fact, that every destination got its
// messages and every source is empty, then removes the run's objects. It
// returns "ok" or what was wrong. RabbitMQ's counts come from the
// management statistics, which lag by up to 5 s: that is why this runs in
// the background while the next run fills.
func (b *bench) cleanup(ctx context.Context, o runObjs) string {
	if o.pair.Src.Kind == kindQpidd { // the qpidd pair (qpidd.go)
		return qpiddCleanup(ctx, o)
	}
	var problems []string
	note := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if o.pair.Src.Kind == "rabbitmq" {
		for _, s := range o.shovs {
			note(o.pair.Src.mgmt.DeleteShovel(ctx, s))
		}
	}
	if o.pair.Dst.Kind == "rabbitmq" {
		m := o.pair.Dst.mgmt
		for k := range o.dstQ {
			note(waitQueueMessages(ctx, m, o.dstQ[k], o.per, 20*time.Second))
			note(m.DeleteQueue(ctx, o.dstQ[k]))
			note(m.DeleteExchange(ctx, o.dstX[k]))
		}
	} else {
		for _, a := range o.dstQ {
			got, err := drain(ctx, o.pair.Dst, a, o.per, 3*time.Second)
			note(err)
			if got != o.per {
				note(fmt.Errorf("%s on %s: %d messages, want %d", a, o.pair.Dst.Name, got, o.per))
			}
		}
	}
	if o.pair.Src.Kind == "rabbitmq" {
		m := o.pair.Src.mgmt
		for _, q := range o.srcQ {
			note(waitQueueMessages(ctx, m, q, 0, 20*time.Second))
			note(m.DeleteQueue(ctx, q))
		}
		for _, x := range o.srcX {
			note(m.DeleteExchange(ctx, x))
		}
	} else {
		for _, a := range o.srcQ {
			got, err := drain(ctx, o.pair.Src, a, -1, 300*time.Millisecond)
			note(err)
			if got != 0 {
				note(fmt.Errorf("%s on %s: %d messages left at the source", a, o.pair.Src.Name, got))
			}
		}
	}
	if o.via.Name != "" {
		problems = append(problems, b.transitCleanup(ctx, o)...)
	}
	if len(problems) > 0 {
		return strings.Join(problems, "; ")
	}
	return "ok"
}

// runCase sets up, measures and (in the background) verifies one run.
func (b *bench) runCase(ctx context.Context, c caseSpec, p pairDef) (*sample, error) {
	o := b.objects(c, p)
	s := &sample{Verified: "pending"}
	launched := false
	defer func() {
		if launched {
			return
		}
		// Setup or the run failed: remove what was made, in the foreground.
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b.cleanup(cctx, o)
	}()
	t0 := time.Now()
	if o.via.Name != "" {
		if err := b.noteDeadLetters(ctx, &o); err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	if err := b.setup(ctx, o, c.Size); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	s.FillSecs = time.Since(t0).Seconds()
	b.pending.Wait() // the previous run's check and clean-up: not while timing
	s.WaitSecs = time.Since(t0).Seconds() - s.FillSecs
	var err error
	switch c.Variant {
	case vRaw:
		err = b.runRaw(ctx, o, s)
	case vEngine, vEngineAck:
		err = b.runFedrouter(ctx, o, c.Ack, s)
	case vFanout:
		err = b.runFanout(ctx, o, s)
	case vTransitEngine:
		err = b.runTransit(ctx, o, s)
	case vShovel091, vShovel10:
		err = b.runShovel(ctx, o, c.Variant == vShovel10, s)
	case vQpidFed:
		err = b.runQpidFed(ctx, o, s)
	case vQdrouterd:
		err = b.runQdrouterd(ctx, o, s)
	default:
		err = notRetried(fmt.Errorf("unknown variant %q", c.Variant))
	}
	if err != nil {
		return nil, err
	}
	s.Rate = float64(c.Messages) / s.Seconds
	launched = true
	b.pending.Add(1)
	go func() { // joined by the next runCase (before its timing) and by run
		defer b.pending.Done()
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.Verified = b.cleanup(cctx, o)
	}()
	return s, nil
}

// timeout bounds one timed run: generous, for a loaded machine.
func (b *bench) timeout(n int) time.Duration {
	return 2*time.Minute + time.Duration(n/200)*time.Second
}

// poll calls done every interval until it reports true, fails, or timeout.
func poll(ctx context.Context, interval, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func sizeName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}
