package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/go-amqp"
)

// dial opens a plain go-amqp connection: as guest on RabbitMQ, anonymous
// on the Proton brokers (the only mechanism they offer).
func dial(ctx context.Context, b broker, container string) (*amqp.Conn, error) {
	sasl := amqp.SASLTypeAnonymous()
	if b.Kind == "rabbitmq" {
		sasl = amqp.SASLTypePlain("guest", "guest")
	}
	c, err := amqp.Dial(ctx, b.URL, &amqp.ConnOptions{ContainerID: container, SASLType: sasl})
	if err != nil {
		return nil, fmt.Errorf("dial %s (%s): %w", b.Name, b.URL, err)
	}
	return c, nil
}

// queueAddr is the AMQP address of an existing queue on the broker.
func queueAddr(b broker, q string) string {
	if b.Kind == "rabbitmq" {
		return "/amq/queue/" + q
	}
	return q
}

// exchangeAddr is where a queue route delivers on the broker.
func exchangeAddr(b broker, x string) string {
	if b.Kind == "rabbitmq" {
		return "/exchange/" + x
	}
	return x
}

// benchMessage is message i of a run: a message-id and a body of size bytes.
// The id is a string: RabbitMQ 3.10 crashes the channel of an AMQP 0-9-1
// consumer (the 0-9-1 shovel) on an AMQP 1.0 message whose message-id is
// a ulong (badarg in rabbit_framing_amqp_0_9_1:encode_properties).
func benchMessage(payload []byte, i int) *amqp.Message {
	return &amqp.Message{
		Properties: &amqp.MessageProperties{MessageID: fmt.Sprintf("m-%08d", i)},
		Data:       [][]byte{payload},
	}
}

// fill sends n messages of size bytes to addr, unsettled and pipelined
// (up to window outstanding per sender), over `senders` links on their own
// sessions of one connection, and returns once the broker accepted all.
func fill(ctx context.Context, b broker, addr string, n, size, senders int) error {
	conn, err := dial(ctx, b, "fedbench-fill")
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }() // a benchmark client: a failed close changes no figure
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	senders = max(1, min(senders, n))
	errs := make([]error, senders)
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		from, to := s*n/senders, (s+1)*n/senders
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[s] = fillOne(ctx, conn, addr, payload, from, to)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fill %s on %s: %w", addr, b.Name, err)
	}
	return nil
}

func fillOne(ctx context.Context, conn *amqp.Conn, addr string, payload []byte, from, to int) error {
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	snd, err := sess.NewSender(ctx, addr, nil)
	if err != nil {
		return err
	}
	const window = 1000
	receipts := make(chan amqp.SendReceipt, window)
	waitErr := make(chan error, 1)
	go func() { // owned: ends when receipts is closed or on the first bad outcome
		waitErr <- awaitAccepted(ctx, receipts)
	}()
	var sendErr error
	for i := from; i < to && sendErr == nil; i++ {
		var r amqp.SendReceipt
		if r, sendErr = snd.SendWithReceipt(ctx, benchMessage(payload, i), nil); sendErr == nil {
			select {
			case receipts <- r:
			case err := <-waitErr:
				sendErr = err
				waitErr <- err
			}
		}
	}
	close(receipts)
	return errors.Join(sendErr, <-waitErr)
}

// awaitAccepted waits for each receipt in turn; every outcome must be
// accepted. It keeps reading after a failure so the sender never blocks.
func awaitAccepted(ctx context.Context, receipts <-chan amqp.SendReceipt) error {
	var first error
	for r := range receipts {
		if first != nil {
			continue
		}
		st, err := r.Wait(ctx)
		if err == nil {
			if _, ok := st.(*amqp.StateAccepted); !ok {
				err = fmt.Errorf("outcome %T %v", st, st)
			}
		}
		first = err
	}
	return first
}

// drain consumes from addr until want messages arrived or nothing came
// for idle, and returns how many it got. The Proton brokers hold their
// queues in memory: this is both the count at the destination and the
// clean-up.
func drain(ctx context.Context, b broker, addr string, want int, idle time.Duration) (int, error) {
	conn, err := dial(ctx, b, "fedbench-drain")
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }() // a benchmark client: a failed close changes no figure
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		return 0, err
	}
	// Automatic credit is safe here: the Proton brokers do not over-deliver
	// (RabbitMQ does, see docs/go-amqp-credit.md), and they pre-settle.
	rcv, err := sess.NewReceiver(ctx, addr, &amqp.ReceiverOptions{Credit: 1000})
	if err != nil {
		return 0, fmt.Errorf("drain %s on %s: %w", addr, b.Name, err)
	}
	got := 0
	for want < 0 || got < want {
		rctx, cancel := context.WithTimeout(ctx, idle)
		msg, err := rcv.Receive(rctx, nil)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				break
			}
			return got, fmt.Errorf("drain %s on %s: %w", addr, b.Name, err)
		}
		_ = rcv.AcceptMessage(ctx, msg) // a no-op for pre-settled transfers
		got++
	}
	return got, nil
}
