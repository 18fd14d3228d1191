package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/go-amqp"
	"github.com/urfave/cli/v2"
)

// The raw pipe is the floor fedrouter adds to: the smallest correct
// at-least-once forwarder written with go-amqp alone (none of fedrouter's
// packages), run as its own process so its CPU and memory are accounted
// exactly like the router's. Per pipe: a receiver on the source queue with
// manual credit, a sender to the destination, one goroutine that receives
// and sends in order, one that waits for each outcome in order and accepts
// the message at the source. Same window as a route: credit/2 granted at a
// time, at most credit unsettled. Like fedrouter, one connection per broker
// and a session pair per pipe.
//
// Protocol with the parent (fedbench run): the pipe dials both brokers and
// prints "ready"; on a line "go" on stdin it attaches and forwards; once
// every pipe has had n messages accepted at the destination and settled at
// the source it prints "done"; it exits at EOF on stdin, so the parent can
// read its /proc accounting first.

func pipeCommand() *cli.Command {
	return &cli.Command{
		Name:  "pipe",
		Usage: "the raw go-amqp pipe (run by fedbench run as its own process)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "src-url", Required: true, Usage: "source broker `URL`"},
			&cli.StringFlag{Name: "dst-url", Required: true, Usage: "destination broker `URL`"},
			&cli.StringSliceFlag{Name: "link", Required: true, Usage: "`SRC_ADDR>DST_ADDR`, one per pipe"},
			&cli.IntFlag{Name: "n", Required: true, Usage: "messages per pipe"},
			&cli.IntFlag{Name: "credit", Value: 500, Usage: "in-flight window per pipe (as a route's credit)"},
			&cli.IntFlag{Name: "conns", Value: 1, Usage: "connections per broker, pipes spread over them (fedrouter holds one per broker)"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the forwarding (from \"go\" to \"done\") to `FILE`"},
		},
		Action: runPipe,
	}
}

func runPipe(c *cli.Context) error {
	ctx := c.Context
	srcB := broker{Name: "src", URL: c.String("src-url")}
	dstB := broker{Name: "dst", URL: c.String("dst-url")}
	var srcs, dsts []*amqp.Conn
	for i := 0; i < max(1, c.Int("conns")); i++ {
		src, err := dial(ctx, srcB, fmt.Sprintf("fedbench-pipe-src-%d", i))
		if err != nil {
			return err
		}
		defer func() { _ = src.Close() }() // the process exits next: a failed close changes no figure
		dst, err := dial(ctx, dstB, fmt.Sprintf("fedbench-pipe-dst-%d", i))
		if err != nil {
			return err
		}
		defer func() { _ = dst.Close() }() // likewise
		srcs, dsts = append(srcs, src), append(dsts, dst)
	}
	fmt.Println("ready")
	in := bufio.NewReader(os.Stdin)
	if line, err := in.ReadString('\n'); err != nil || strings.TrimSpace(line) != "go" {
		return fmt.Errorf("pipe: want \"go\" on stdin, got %q (%v)", line, err)
	}
	if path := c.String("cpuprofile"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer closeProfile(f)
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	links := c.StringSlice("link")
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, l := range links {
		from, to, ok := strings.Cut(l, ">")
		if !ok {
			return fmt.Errorf("pipe: --link %q: want SRC_ADDR>DST_ADDR", l)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := i % len(srcs)
			errs[i] = pipeOne(ctx, srcs[k], dsts[k], from, to, c.Int("n"), c.Int("credit"))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Printf("done %d %.6f\n", len(links)*c.Int("n"), time.Since(start).Seconds())
	_, _ = io.Copy(io.Discard, in) // until the parent closes stdin
	return nil
}

type pipeSent struct {
	msg *amqp.Message // as received: settled through the source receiver
	rc  amqp.SendReceipt
}

// pipeOne forwards n messages from one source address to one destination.
func pipeOne(ctx context.Context, src, dst *amqp.Conn, from, to string, n, credit int) error {
	ss, err := src.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	defer closeSession(ss)
	ds, err := dst.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	defer closeSession(ds)
	// Manual credit: go-amqp's automatic credit stalls for good when
	// RabbitMQ over-delivers (docs/go-amqp-credit.md).
	rcv, err := ss.NewReceiver(ctx, from, &amqp.ReceiverOptions{Credit: -1})
	if err != nil {
		return fmt.Errorf("attach receiver %s: %w", from, err)
	}
	snd, err := ds.NewSender(ctx, to, nil)
	if err != nil {
		return fmt.Errorf("attach sender %s: %w", to, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &pipeState{queue: make(chan pipeSent, credit), notify: make(chan struct{}, 1)}
	settleErr := make(chan error, 1)
	go func() { settleErr <- p.settle(ctx, rcv, n) }() // joined below
	err = p.forward(ctx, rcv, snd, n, credit)
	if err != nil {
		cancel()
	}
	return errors.Join(err, <-settleErr)
}

type pipeState struct {
	queue   chan pipeSent
	settled atomic.Int64  // messages accepted at the source
	notify  chan struct{} // poked (non-blocking) on each settlement
}

// forward receives and sends in order, granting credit/2 at a time once
// the previous grant is used up and at most credit are unsettled. (Topping
// the grant up earlier, at half, stalled against RabbitMQ 3.10 in 2 of 3
// runs: docs/performance.md.)
func (p *pipeState) forward(ctx context.Context, rcv *amqp.Receiver, snd *amqp.Sender, n, credit int) error {
	window := max(1, credit/2)
	left := 0 // credit left at the source; negative after an over-delivery
	for received := 0; received < n; received++ {
		if left <= 0 {
			for int64(received)-p.settled.Load()+int64(window) > int64(credit) {
				select {
				case <-p.notify:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if err := rcv.IssueCredit(uint32(window - left)); err != nil {
				return err
			}
			left = window
		}
		msg, err := rcv.Receive(ctx, nil)
		if err != nil {
			return fmt.Errorf("receive: %w", err)
		}
		left--
		out := &amqp.Message{ // delivery annotations are per hop: dropped
			Format: msg.Format, Header: msg.Header, Properties: msg.Properties,
			Annotations: msg.Annotations, ApplicationProperties: msg.ApplicationProperties,
			Data: msg.Data, Value: msg.Value, Sequence: msg.Sequence, Footer: msg.Footer,
		}
		rc, err := snd.SendWithReceipt(ctx, out, nil)
		if err != nil {
			return fmt.Errorf("send: %w", err)
		}
		select {
		case p.queue <- pipeSent{msg, rc}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// settle waits for each outcome in send order and accepts the message at
// the source once the destination accepted it.
func (p *pipeState) settle(ctx context.Context, rcv *amqp.Receiver, n int) error {
	for i := 0; i < n; i++ {
		var s pipeSent
		select {
		case s = <-p.queue:
		case <-ctx.Done():
			return ctx.Err()
		}
		st, err := s.rc.Wait(ctx)
		if err != nil {
			return fmt.Errorf("outcome: %w", err)
		}
		if _, ok := st.(*amqp.StateAccepted); !ok {
			return fmt.Errorf("outcome %T: the raw pipe handles only accepted", st)
		}
		if err := rcv.AcceptMessage(ctx, s.msg); err != nil {
			return fmt.Errorf("accept at source: %w", err)
		}
		p.settled.Add(1)
		select {
		case p.notify <- struct{}{}:
		default:
		}
	}
	return nil
}

// closeSession ends a session without waiting long (RabbitMQ answers
// detaches lazily; ending the session reclaims its links).
func closeSession(s *amqp.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.Close(ctx)
}

// closeProfile closes a CPU profile file, saying so when it could not: the
// profile on disk may then be cut short.
func closeProfile(f *os.File) {
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "fedbench: closing the CPU profile %s: %v (it may be incomplete)\n", f.Name(), err)
	}
}
