package brokertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
)

// Helpers shared by the integration tests of every package: connections,
// sessions and bulk send/receive against the real brokers. Their waits
// derive from the test's context (t.Context()), except in cleanups, which
// run after it is cancelled.

// Dial connects to cfg's broker until the test's cleanup closes the
// connection. The connection does not follow t.Context(): that ends before
// the cleanups, and some of them still use it (ending sessions, draining).
func Dial(t testing.TB, cfg famqp.BrokerConfig, opts famqp.ConnOptions) *famqp.Conn {
	t.Helper()
	// Background: the connection outlives t.Context(), which ends before
	// the cleanups that still use it; the cleanup below closes it.
	c, err := famqp.Dial(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // Close always returns nil
	return c
}

func Session(t testing.TB, c *famqp.Conn) *famqp.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, _, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func Profile(t testing.TB, cfg famqp.BrokerConfig) famqp.Profile {
	t.Helper()
	p, err := famqp.NewProfile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// DeclareQueue makes q exist where the broker needs it declared first
// (RabbitMQ; qpidd, which may be strict).
func DeclareQueue(t testing.TB, cfg famqp.BrokerConfig, q string) {
	t.Helper()
	if cfg.Profile == "qpid" {
		qpidDeclare(t, cfg, "", "", q, "")
		return
	}
	if cfg.Profile != "rabbitmq" {
		return
	}
	m, err := famqp.NewRabbitManagement(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DeclareQueue(t.Context(), q, famqp.QueueArgs{Durable: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// After t.Context() has ended; best effort: a queue left behind
		// has a unique name and harms no other test.
		_ = m.DeleteQueue(context.Background(), q)
		m.Close()
	})
}

// SendAll sends msgs with receipts pipelined (at most window in flight) and
// fails unless every one is accepted.
func SendAll(t testing.TB, fs *famqp.Session, addr string, window int, n int, mk func(i int) *goamqp.Message) {
	t.Helper()
	s := fs.GoAMQP() // a test publisher is an AMQP application: go-amqp as is
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	snd, err := s.NewSender(ctx, addr, nil)
	if err != nil {
		t.Fatalf("attach sender %s: %v", addr, err)
	}
	receipts := make(chan goamqp.SendReceipt, window)
	errc := make(chan error, 1)
	// Owned by SendAll, which joins it through errc (closed when it ends)
	// before returning or failing.
	go func() {
		defer close(errc)
		for r := range receipts {
			st, err := r.Wait(ctx)
			if err != nil {
				errc <- err
				return
			}
			if _, ok := st.(*goamqp.StateAccepted); !ok {
				errc <- fmt.Errorf("outcome %T", st)
				return
			}
		}
	}()
	for i := 0; i < n; i++ {
		r, err := snd.SendWithReceipt(ctx, mk(i), nil)
		if err != nil {
			close(receipts)
			t.Fatalf("send %d: %v (receipts: %v)", i, err, <-errc)
		}
		select {
		case receipts <- r:
		case err := <-errc: // the receipt loop failed and reads no more
			close(receipts)
			t.Fatalf("receipt: %v", err)
		}
	}
	close(receipts)
	if err := <-errc; err != nil {
		t.Fatalf("receipt: %v", err)
	}
}

func Body(i int) *goamqp.Message { return goamqp.NewMessage([]byte(fmt.Sprintf("m-%06d", i))) }

// ReceiveN receives n messages, accepting each, and returns their bodies.
// It fails if no message arrives for stallAfter.
func ReceiveN(t testing.TB, r *famqp.Receiver, n int, stallAfter time.Duration) []string {
	t.Helper()
	out := make([]string, 0, n)
	for len(out) < n {
		ctx, cancel := context.WithTimeout(t.Context(), stallAfter)
		msg, err := r.Receive(ctx)
		if err != nil {
			cancel()
			t.Fatalf("after %d of %d messages: %v (receiver stats %+v)", len(out), n, err, r.Stats())
		}
		if err := r.Accept(ctx, msg); err != nil {
			cancel()
			t.Fatalf("accept: %v", err)
		}
		cancel()
		out = append(out, string(msg.Data()))
	}
	return out
}

func OpenReceiver(t testing.TB, s *famqp.Session, spec famqp.LinkSpec, window int) *famqp.Receiver {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := famqp.NewReceiver(ctx, s, spec, famqp.ReceiverConfig{Window: window})
	if err != nil {
		t.Fatalf("attach receiver %s: %v", spec.Address, err)
	}
	return r
}

// Numbered is message i of a test stream: every section set, with the
// sequence number in the application properties.
func Numbered(i int) *goamqp.Message {
	subj := "orders.created"
	return &goamqp.Message{
		Header:                &goamqp.MessageHeader{Durable: true, Priority: 6},
		Annotations:           goamqp.Annotations{"x-opt-origin": "paris"},
		Properties:            &goamqp.MessageProperties{MessageID: fmt.Sprintf("id-%06d", i), Subject: &subj, CorrelationID: "corr"},
		ApplicationProperties: map[string]any{"seq": int64(i), "tenant": "acme"},
		Data:                  [][]byte{[]byte(fmt.Sprintf("m-%06d", i))},
	}
}

// Collect receives from addr on c until want distinct sequence numbers
// (of Numbered messages) arrived or nothing came for stall; it returns the
// sequence numbers in arrival order (duplicates included) and checks every
// message's sections.
//
// It receives on a session of its own, ended on return: a receiver left
// attached would keep taking (and holding) messages.
func Collect(t testing.TB, c *famqp.Conn, addr string, want int, stall time.Duration) []int64 {
	t.Helper()
	s := Session(t, c)
	defer famqp.CloseSessionContext(t.Context(), s)
	r := OpenReceiver(t, s, famqp.LinkSpec{Address: addr}, 500)
	var got []int64
	seen := map[int64]bool{}
	for len(seen) < want {
		ctx, cancel := context.WithTimeout(t.Context(), stall)
		msg, err := r.Receive(ctx)
		if err != nil {
			cancel()
			t.Fatalf("%s: after %d distinct of %d: %v", addr, len(seen), want, err)
		}
		if err := r.Accept(ctx, msg); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
		seq, ok := msg.Property("seq").(int64)
		if !ok {
			t.Fatalf("message without seq: %+v", msg.GoAMQP())
		}
		CheckSections(t, seq, msg.GoAMQP())
		got = append(got, seq)
		seen[seq] = true
	}
	return got
}

// The subject is "orders.created" unless the message says otherwise in its
// "subject" application property (tests that route by subject set both).
func CheckSections(t testing.TB, seq int64, m *goamqp.Message) {
	t.Helper()
	want := Numbered(int(seq))
	subject := "orders.created"
	if s, ok := m.ApplicationProperties["subject"].(string); ok {
		subject = s
	}
	switch {
	case m.Header == nil || !m.Header.Durable || m.Header.Priority != 6:
		t.Fatalf("seq %d: header %+v", seq, m.Header)
	case m.Annotations["x-opt-origin"] != "paris":
		t.Fatalf("seq %d: annotations %v", seq, m.Annotations)
	case m.ApplicationProperties["tenant"] != "acme":
		t.Fatalf("seq %d: application properties %v", seq, m.ApplicationProperties)
	case m.Properties == nil || m.Properties.MessageID != want.Properties.MessageID || m.Properties.Subject == nil || *m.Properties.Subject != subject:
		t.Fatalf("seq %d: properties %+v", seq, m.Properties)
	case string(m.GetData()) != string(want.GetData()):
		t.Fatalf("seq %d: body %q", seq, m.GetData())
	}
}

func CheckInOrderOnce(t testing.TB, got []int64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("received %d messages, want %d (duplicates?)", len(got), n)
	}
	for i, s := range got {
		if s != int64(i) {
			t.Fatalf("message %d has seq %d: out of order", i, s)
		}
	}
}

// CheckNoLoss fails unless every seq in [0,n) arrived; it returns the
// number of duplicates.
func CheckNoLoss(t testing.TB, got []int64, n int) int {
	t.Helper()
	return CheckNoLossFrom(t, got, 0, n)
}

// CheckNoLossFrom fails unless every seq in [from,to) arrived; it returns
// the number of duplicates.
func CheckNoLossFrom(t testing.TB, got []int64, from, to int) int {
	t.Helper()
	seen := map[int64]int{}
	for _, s := range got {
		seen[s]++
	}
	for i := from; i < to; i++ {
		if seen[int64(i)] == 0 {
			t.Fatalf("seq %d lost (%d distinct, want [%d,%d))", i, len(seen), from, to)
		}
	}
	return len(got) - len(seen)
}

// DeclareExchangeQueue declares, on the RabbitMQ or qpidd broker of cfg,
// exchange ex of kind and, unless q is "", a durable queue q bound to it
// with key; both are deleted at cleanup.
func DeclareExchangeQueue(t testing.TB, cfg famqp.BrokerConfig, ex, kind, q, key string) {
	t.Helper()
	if cfg.Profile == "qpid" {
		qpidDeclare(t, cfg, ex, kind, q, key)
		return
	}
	m, err := famqp.NewRabbitManagement(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := m.DeclareExchange(ctx, ex, kind, true); err != nil {
		t.Fatal(err)
	}
	if q != "" {
		if err := m.DeclareQueue(ctx, q, famqp.QueueArgs{Durable: true}); err != nil {
			t.Fatal(err)
		}
		if err := m.Bind(ctx, ex, q, key); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// After t.Context() has ended; best effort, as in DeclareQueue.
		if q != "" {
			_ = m.DeleteQueue(context.Background(), q)
		}
		_ = m.DeleteExchange(context.Background(), ex)
		m.Close()
	})
}
