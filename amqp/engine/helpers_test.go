package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	"go.uber.org/goleak"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dial opens an engine connection to b with the broker's usual login.
func dial(t testing.TB, b brokertest.Broker, opts engine.Options) *engine.Conn {
	t.Helper()
	if opts.SASL == "" {
		opts.SASL = engine.SASLAnonymous
		if b.Kind == "rabbitmq" {
			opts.SASL, opts.User, opts.Password = engine.SASLPlain, "guest", "guest"
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := engine.Dial(ctx, b.Addr(), opts)
	if err != nil {
		t.Fatalf("dial %s: %v", b.Name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func session(t testing.TB, c *engine.Conn, opts engine.SessionOptions) *engine.Session {
	t.Helper()
	s, err := c.NewSession(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// queue makes a queue unique to the test on b and returns its address.
func queue(t testing.TB, b brokertest.Broker) string {
	t.Helper()
	return queuePrefixed(t, b, "h-engine")
}

// queuePrefixed is queue with its name starting with prefix.
func queuePrefixed(t testing.TB, b brokertest.Broker, prefix string) string {
	t.Helper()
	q := brokertest.UniqueName(t, prefix)
	brokertest.DeclareQueue(t, b.Config(), q)
	if b.Kind == "rabbitmq" {
		return "/amq/queue/" + q
	}
	return q
}

// goamqpConn is the reference client, for the other end of a test.
func goamqpConn(t testing.TB, b brokertest.Broker) *goamqp.Session {
	t.Helper()
	opts := &goamqp.ConnOptions{SASLType: goamqp.SASLTypeAnonymous()}
	if b.Kind == "rabbitmq" {
		opts.SASLType = goamqp.SASLTypePlain("guest", "guest")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := goamqp.Dial(ctx, b.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// body is message i's data: its number and bytes that differ per message.
func body(i, size int) []byte {
	b := make([]byte, size)
	copy(b, fmt.Sprintf("m-%06d-", i))
	for j := 10; j < size; j++ {
		b[j] = byte(i*31 + j*7)
	}
	return b
}

// encodeMessage is an AMQP message with a message-id and one data section.
func encodeMessage(id string, data []byte) []byte {
	b := wire.AppendDescriptor(nil, wire.DescProperties)
	b, mark := wire.BeginList(b)
	b = wire.AppendString(b, id)
	b = wire.EndList(b, mark, 1)
	b = wire.AppendDescriptor(b, wire.DescData)
	return wire.AppendBinary(b, data)
}

// dataOf returns the payload's first data section, checking the
// sections before it scan.
func dataOf(payload []byte) ([]byte, error) {
	s, err := wire.ScanSections(payload)
	if err != nil {
		return nil, err
	}
	d := wire.NewDecoder(payload[s.Bare:])
	for d.Len() > 0 {
		desc := d.Descriptor()
		if desc == wire.DescData {
			v := d.Binary()
			return v, d.Err()
		}
		d.Skip()
		if d.Err() != nil {
			return nil, d.Err()
		}
	}
	return nil, errors.New("no data section")
}

// collector gathers deliveries (copied) from a receiver's callback and
// settles them accepted.
type collector struct {
	ch chan []byte
}

func newCollector(n int) *collector { return &collector{ch: make(chan []byte, n)} }

func (c *collector) onMessage(d *engine.Delivery) {
	c.ch <- bytes.Clone(d.Payload)
	if !d.Settled {
		d.Receiver.Settle(d.ID, engine.Accepted)
	}
}

// take waits for n messages, failing after stall without one.
func (c *collector) take(t testing.TB, n int, stall time.Duration) [][]byte {
	t.Helper()
	out := make([][]byte, 0, n)
	for len(out) < n {
		select {
		case p := <-c.ch:
			out = append(out, p)
		case <-time.After(stall):
			t.Fatalf("%d of %d messages, none for %v", len(out), n, stall)
		}
	}
	return out
}

// outcomes counts a sender's accepted deliveries (OnSettled).
type outcomes struct {
	ch chan wire.StateKind
}

func newOutcomes(n int) *outcomes { return &outcomes{ch: make(chan wire.StateKind, n)} }

func (o *outcomes) onSettled(first, last uint32, st *engine.DeliveryState) {
	for id := first; ; id++ {
		o.ch <- st.Kind
		if id == last {
			return
		}
	}
}

func (o *outcomes) wait(t testing.TB, n int, stall time.Duration) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case k := <-o.ch:
			if k != wire.StateAccepted {
				t.Fatalf("outcome %d: %v", i, k)
			}
		case <-time.After(stall):
			t.Fatalf("%d of %d outcomes, none for %v", i, n, stall)
		}
	}
}
