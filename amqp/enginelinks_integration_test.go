package amqp_test

import (
	"context"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
)

// Issue 25, item 4: the links the engine attaches as go-amqp does, on
// both data paths: a source filter other than a topic binding (a JMS
// selector, which qpidd applies to a queue's consumer) and a subject on
// every message sent (qpidd's exchanges route by it).

var dataPaths = []string{"go-amqp", "engine"}

// colored is Numbered message i with a color: red when i is even.
func colored(i int) *goamqp.Message {
	m := brokertest.Numbered(i)
	m.ApplicationProperties["color"] = map[bool]string{true: "red", false: "blue"}[i%2 == 0]
	return m
}

// A selector on a qpidd queue, on each data path: only the red messages
// come (in order: an ignored filter would hand over message 1 second),
// and the blue ones stay in the queue for a receiver without one.
func TestIntegrationSelectorFilterQpidd(t *testing.T) {
	b := brokertest.Require(t, "qpidd1")[0]
	cfg := b.Config()
	const n = 40
	for _, dataPath := range dataPaths {
		t.Run(dataPath, func(t *testing.T) {
			q := brokertest.UniqueName(t, "h-enginelinks-sel")
			brokertest.DeclareQueue(t, cfg, q)
			c := brokertest.Dial(t, cfg, famqp.ConnOptions{})
			brokertest.SendAll(t, brokertest.Session(t, c), q, 20, n, colored)
			spec := famqp.LinkSpec{Address: q, Filters: []famqp.SourceFilter{
				{Name: "apache.org:selector-filter:string", Code: 0x0000468C00000004, Value: "color = 'red'"}}}
			var got []int64
			if dataPath == "engine" {
				got = receiveEngine(t, c, brokertest.Profile(t, cfg), spec, n/2)
			} else {
				got = receiveGoAMQP(t, c, spec, n/2)
			}
			for i, seq := range got {
				if seq != int64(2*i) {
					t.Fatalf("selector color = 'red': received %v, want the even (red) ones in order", got)
				}
			}
			rest := brokertest.Collect(t, c, q, n/2, 20*time.Second)
			for i, seq := range rest {
				if seq != int64(2*i+1) {
					t.Fatalf("left in the queue: %v, want the odd (blue) ones in order", rest)
				}
			}
			t.Logf("%s: selector took %d red of %d, %d blue left for a plain receiver", dataPath, len(got), n, len(rest))
		})
	}
}

// receiveGoAMQP receives n messages from spec on go-amqp, accepting
// each, and returns their sequence numbers.
func receiveGoAMQP(t *testing.T, c *famqp.Conn, spec famqp.LinkSpec, n int) []int64 {
	t.Helper()
	s := brokertest.Session(t, c)
	defer famqp.CloseSessionContext(t.Context(), s)
	r := brokertest.OpenReceiver(t, s, spec, 100)
	var got []int64
	for len(got) < n {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		msg, err := r.Receive(ctx)
		if err == nil {
			err = r.Accept(ctx, msg)
		}
		cancel()
		if err != nil {
			t.Fatalf("after %d of %d: %v", len(got), n, err)
		}
		seq, _ := msg.Property("seq").(int64)
		brokertest.CheckSections(t, seq, msg.GoAMQP())
		got = append(got, seq)
	}
	return got
}

// receiveEngine receives n messages from spec on the engine (the
// receiver options the routes attach with), accepting each, and returns
// their sequence numbers.
func receiveEngine(t *testing.T, c *famqp.Conn, p famqp.Profile, spec famqp.LinkSpec, n int) []int64 {
	t.Helper()
	opts, err := spec.EngineReceiver(p)
	if err != nil {
		t.Fatal(err)
	}
	payloads := make(chan []byte, n)
	opts.Credit = uint32(n) // no more come than are read: the channel never blocks the reader
	opts.OnMessage = func(d *engine.Delivery) {
		payloads <- append([]byte(nil), d.Payload...)
		d.Receiver.Settle(d.ID, engine.Accepted)
	}
	sess := engineSession(t, c)
	r, err := sess.NewReceiver(t.Context(), opts)
	if err != nil {
		t.Fatalf("attach engine receiver %+v: %v", spec, err)
	}
	defer func() { _ = r.Close(context.Background()) }()
	var got []int64
	for len(got) < n {
		select {
		case p := <-payloads:
			var m goamqp.Message
			if err := m.UnmarshalBinary(p); err != nil {
				t.Fatalf("message %d does not decode: %v", len(got), err)
			}
			seq, _ := m.ApplicationProperties["seq"].(int64)
			brokertest.CheckSections(t, seq, &m)
			got = append(got, seq)
		case <-time.After(20 * time.Second):
			t.Fatalf("after %d of %d: nothing came for 20 s", len(got), n)
		}
	}
	return got
}

// engineSession begins a session on c's engine connection, ended with
// the test.
func engineSession(t *testing.T, c *famqp.Conn) *engine.Session {
	t.Helper()
	ec, err := c.Engine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sess, err := ec.NewSession(t.Context(), engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sess.End(ctx) // ended already when the connection went
	})
	return sess
}

// A literal key to a qpidd topic exchange, on each data path: every
// message sent through the target's link gets the key as its subject
// (whatever subject it had: the exchange routes by it, and nothing is
// bound to the one it came with), and keeps every other section.
func TestIntegrationSubjectOnEveryMessageQpidd(t *testing.T) {
	b := brokertest.Require(t, "qpidd1")[0]
	cfg := b.Config()
	const n = 50
	for _, dataPath := range dataPaths {
		t.Run(dataPath, func(t *testing.T) {
			ex, q := brokertest.UniqueName(t, "h-enginelinks-ex"), brokertest.UniqueName(t, "h-enginelinks-q")
			brokertest.DeclareExchangeQueue(t, cfg, ex, "topic", q, "news.eu")
			p := brokertest.Profile(t, cfg)
			target, err := p.Target(famqp.Node{Kind: famqp.Exchange, Name: ex, Key: "news.eu"})
			if err != nil || target.Subject != "news.eu" {
				t.Fatalf("target %+v, %v: want the subject news.eu", target, err)
			}
			c := brokertest.Dial(t, cfg, famqp.ConnOptions{})
			if dataPath == "engine" {
				sendEngine(t, c, target, n)
			} else {
				sendGoAMQP(t, brokertest.Session(t, c), target, n)
			}
			got := brokertest.Collect(t, c, q, n, 20*time.Second)
			brokertest.CheckInOrderOnce(t, got, n)
		})
	}
}

// keyed is Numbered message i, sent with its subject orders.created,
// saying it must arrive with news.eu (brokertest.CheckSections).
func keyed(i int) *goamqp.Message {
	m := brokertest.Numbered(i)
	m.ApplicationProperties["subject"] = "news.eu"
	return m
}

// sendGoAMQP sends keyed messages 0..n-1 through a famqp sender for
// target (go-amqp's path), each waited for: accepted.
func sendGoAMQP(t *testing.T, s *famqp.Session, target famqp.LinkSpec, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	snd, err := s.NewSender(ctx, target)
	if err != nil {
		t.Fatalf("attach sender %+v: %v", target, err)
	}
	for i := 0; i < n; i++ {
		r, err := snd.Send(ctx, famqp.WrapMessage(keyed(i)))
		if err == nil {
			_, err = r.Wait(ctx)
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
}

// sendEngine sends keyed messages 0..n-1 on an engine sender for
// target, each waited for: accepted.
func sendEngine(t *testing.T, c *famqp.Conn, target famqp.LinkSpec, n int) {
	t.Helper()
	so, err := target.EngineSender()
	if err != nil {
		t.Fatal(err)
	}
	outcomes := make(chan *engine.DeliveryState, n)
	so.OnSettled = func(first, last uint32, st *engine.DeliveryState) {
		for id := first; id-first <= last-first; id++ {
			s := *st
			outcomes <- &s
		}
	}
	snd, err := engineSession(t, c).NewSender(t.Context(), so)
	if err != nil {
		t.Fatalf("attach engine sender %+v: %v", target, err)
	}
	defer func() { _ = snd.Close(context.Background()) }()
	for i := 0; i < n; i++ {
		payload, err := keyed(i).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := snd.Send(t.Context(), payload); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		select {
		case st := <-outcomes:
			if st.Kind != engine.Accepted.Kind {
				t.Fatalf("message %d: outcome %+v", i, st)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("message %d: no outcome in 20 s", i)
		}
	}
}
