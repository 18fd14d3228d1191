package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// addressed is message i with the annotation x-to naming where it goes
// (comma-separated keys: one copy each).
func addressed(i int, to string) []byte {
	b := wire.AppendDescriptor(nil, wire.DescMessageAnnotations)
	b, _ = wire.AppendValue(b, wire.Map{{Key: wire.Symbol("x-to"), Value: to}})
	return append(b, encodeMessage(fmt.Sprint(i), body(i, 64))...)
}

// fillAddressed sends to[i] as message i's x-to, to addr on b.
func fillAddressed(t *testing.T, b brokertest.Broker, addr string, to []string) {
	t.Helper()
	out := newOutcomes(len(to))
	snd, err := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{}).NewSender(t.Context(),
		engine.SenderOptions{Address: addr, OnSettled: out.onSettled})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range to {
		if _, err := snd.Send(t.Context(), addressed(i, k)); err != nil {
			t.Fatal(err)
		}
	}
	out.wait(t, len(to), 30*time.Second)
}

// byXTo dispatches each message to the keys of its x-to, each copy with
// x-copy set to its key.
func byXTo(payload []byte, s *wire.Sections, c *engine.Choice) {
	v, _ := s.Annotation(payload, "x-to")
	d := wire.NewDecoder(v)
	to := d.String()
	if to == "refuse" {
		c.Refuse = &wire.Error{Condition: "fed:bad-request", Description: "refused by the test"}
		return
	}
	if to == "" {
		return // dropped
	}
	for _, k := range strings.Split(to, ",") {
		c.Copies = append(c.Copies, engine.Copy{To: k, Set: []wire.Annotated{{Key: "x-copy", Value: wire.AppendString(nil, k)}, {Key: "x-to"}}})
	}
}

// owner answers a forwarder's attach requests as links.EngineForwarder
// does: keys in at attach there (the key's address in addr), others are
// refused with fed:no-such-address. It stops at the test's end.
type owner struct {
	mu   sync.Mutex
	keys []string // attached, in order
}

func serve(t *testing.T, f *engine.Forwarder, at map[string]*engine.Session, addr map[string]string) *owner {
	o := &owner{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case key := <-f.AttachRequests():
				sess, ok := at[key]
				if !ok {
					f.Unreachable(key, &wire.Error{Condition: "fed:no-such-address", Description: key + " does not exist"})
					continue
				}
				if _, err := f.AddDestination(ctx, key, sess, engine.SenderOptions{Address: addr[key]}); err != nil {
					t.Errorf("attach %s: %v", key, err)
					return
				}
				o.mu.Lock()
				o.keys = append(o.keys, key)
				o.mu.Unlock()
			}
		}
	}()
	return o
}

// drainQueue takes n messages from addr on b (settled accepted) and
// returns them in order.
func drainQueue(t *testing.T, b brokertest.Broker, addr string, n int) [][]byte {
	t.Helper()
	col := newCollector(n + 16)
	if _, err := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{}).NewReceiver(t.Context(),
		engine.ReceiverOptions{Address: addr, Credit: 100, OnMessage: col.onMessage}); err != nil {
		t.Fatal(err)
	}
	return col.take(t, n, 20*time.Second)
}

func annotation(t *testing.T, p []byte, key string) string {
	t.Helper()
	s, err := wire.ScanSections(p)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := s.Annotation(p, key)
	if !ok {
		return ""
	}
	d := wire.NewDecoder(v)
	return d.String()
}

// Each message goes to the destination it names, chosen per message
// among three queues whose senders are attached lazily (on the first
// message for each, by the owner, off the reader goroutine); a message
// for a destination that does not exist is rejected at the source with
// the owner's condition, one that Dispatch refuses with Dispatch's, one
// with no copy is dropped (accepted). Every queue gets its messages byte
// for byte, in order, and the source is settled for all.
func TestConformanceForwardDispatch(t *testing.T) {
	bs := brokertest.Require(t, "qpidd1", "qpidd2")
	src, dst := bs[0], bs[1]
	srcAddr := queue(t, src)
	addr := map[string]string{}
	at := map[string]*engine.Session{}
	ds := session(t, dial(t, dst, engine.Options{}), engine.SessionOptions{})
	for _, k := range []string{"a", "b", "c"} {
		addr[k], at[k] = queue(t, dst), ds
	}
	const n = 300
	to := make([]string, n)
	want := map[string][]int{}
	for i := range to {
		switch {
		case i == 10:
			to[i] = "missing"
		case i == 20:
			to[i] = "refuse"
		case i == 30:
			to[i] = ""
		default:
			to[i] = []string{"a", "b", "c"}[i%3]
			want[to[i]] = append(want[to[i]], i)
		}
	}
	fillAddressed(t, src, srcAddr, to)
	ss := session(t, dial(t, src, engine.Options{}), engine.SessionOptions{})
	f, _, err := engine.ForwardDispatch(t.Context(), ss, engine.ReceiverOptions{Address: srcAddr, Credit: 50}, engine.ForwardOptions{Dispatch: byXTo})
	if err != nil {
		t.Fatal(err)
	}
	o := serve(t, f, at, addr)
	waitSettled(t, f, n, 30*time.Second)
	for k, ids := range want {
		got := drainQueue(t, dst, addr[k], len(ids))
		for j, p := range got {
			b, err := dataOf(p)
			if err != nil || !bytes.Equal(b, body(ids[j], 64)) {
				t.Fatalf("%s message %d: want %d: %v", k, j, ids[j], err)
			}
			if c, x := annotation(t, p, "x-copy"), annotation(t, p, "x-to"); c != k || x != "" {
				t.Fatalf("%s message %d: x-copy %q, x-to %q", k, j, c, x)
			}
		}
	}
	st := f.Stats()
	t.Logf("%+v, attached %v", st, o.keys)
	if st.Forwarded != n-3 || st.Settled != n || st.Accepted != n-3 || st.Refusals != 2 || st.Dropped != 1 || st.Destinations != 3 || st.Released != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A forwarder keeps senders for at most MaxDestinations: a message for
// one more stops it with ErrTooManyDestinations, released at the source
// (which keeps it and every later one), as links.DispatchSink ends its
// run on go-amqp.
func TestConformanceForwardDestinationsBound(t *testing.T) {
	bs := brokertest.Require(t, "qpidd1", "qpidd2")
	src, dst := bs[0], bs[1]
	srcAddr := queue(t, src)
	ds := session(t, dial(t, dst, engine.Options{}), engine.SessionOptions{})
	addr := map[string]string{"a": queue(t, dst), "b": queue(t, dst), "c": queue(t, dst)}
	at := map[string]*engine.Session{"a": ds, "b": ds, "c": ds}
	fillAddressed(t, src, srcAddr, []string{"a", "b", "a", "c", "a"})
	ss := session(t, dial(t, src, engine.Options{}), engine.SessionOptions{})
	f, rcv, err := engine.ForwardDispatch(t.Context(), ss, engine.ReceiverOptions{Address: srcAddr, Credit: 1},
		engine.ForwardOptions{Dispatch: byXTo, MaxDestinations: 2})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, f, at, addr)
	brokertest.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
		if st := f.Stats(); !errors.Is(f.Err(), engine.ErrTooManyDestinations) || st.Settled+st.Released < 5 {
			return fmt.Errorf("%+v, err %v", st, f.Err())
		}
		return nil
	})
	st := f.Stats()
	if st.Accepted != 3 || st.Destinations != 2 {
		t.Fatalf("stats %+v", st)
	}
	if err := rcv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The source kept the message for c and the one after it.
	for i, p := range drainQueue(t, src, srcAddr, 2) {
		if b, _ := dataOf(p); !bytes.Equal(b, body(3+i, 64)) {
			t.Fatalf("kept message %d: %q", i, b)
		}
	}
}

// Fan-out: each source delivery copied to three destinations is settled
// at the source once all three have their outcome: accepted when all
// accepted; rejected (with that copy's error) when one rejected; and
// when one gives no outcome, it waits until Expire gives it one.
func TestConformanceForwardFanout(t *testing.T) {
	for _, tc := range []struct{ name, cond string }{{"one rejects", "amqp:resource-limit-exceeded"}, {"one answers nothing", ""}, {"all accept", "-"}} {
		t.Run(tc.name, func(t *testing.T) { forwardFanout(t, tc.cond) })
	}
}

func forwardFanout(t *testing.T, cond string) {
	const n = 20
	b := brokertest.Require(t, "rabbit1")[0]
	srcAddr := queue(t, b)
	bs := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{})
	addr := map[string]string{"a": queue(t, b), "b": queue(t, b)}
	at := map[string]*engine.Session{"a": bs, "b": bs}
	keys := "a,b"
	if cond != "-" {
		addr["peer"] = "peer"
		at["peer"] = session(t, dialFake(t, rejectingPeer(t, cond), engine.Options{}), engine.SessionOptions{})
		keys = "a,peer,b"
	}
	to := make([]string, n)
	for i := range to {
		to[i] = keys
	}
	fillAddressed(t, b, srcAddr, to)
	ss := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{})
	f, rcv, err := engine.ForwardDispatch(t.Context(), ss, engine.ReceiverOptions{Address: srcAddr, Credit: 8}, engine.ForwardOptions{Dispatch: byXTo})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, f, at, addr)
	if cond == "" {
		// Nothing settles until Expire: the source's 8 credits (or a
		// few more: RabbitMQ 3.10 adds a grant to what is in flight) are
		// held by deliveries waiting for the peer's outcome.
		brokertest.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
			if st := f.Stats(); st.Copies < 3*8 || st.InFlight < 8 {
				return fmt.Errorf("%+v", st)
			}
			return nil
		})
		if st := f.Stats(); st.Settled != 0 {
			t.Fatalf("settled without the peer's outcome: %+v", st)
		}
		brokertest.Eventually(t, 30*time.Second, 10*time.Millisecond, func() error {
			f.Expire(time.Now(), &engine.DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: "amqp:not-allowed"}})
			if st := f.Stats(); st.Settled < n {
				return fmt.Errorf("%+v", st)
			}
			return nil
		})
	} else {
		waitSettled(t, f, n, 30*time.Second)
	}
	st := f.Stats()
	t.Logf("%+v", st)
	switch cond {
	case "-":
		if st.Accepted != n || st.Copies != 2*n {
			t.Fatalf("stats %+v", st)
		}
	case "":
		if st.Expired != n || st.Accepted != 0 {
			t.Fatalf("stats %+v", st)
		}
	default:
		if st.Rejected != n || st.Accepted != 0 || st.Copies != 3*n {
			t.Fatalf("stats %+v", st)
		}
	}
	// The copies the queues accepted stay delivered, every one, in order.
	for _, k := range []string{"a", "b"} {
		for i, p := range drainQueue(t, b, addr[k], n) {
			if d, _ := dataOf(p); !bytes.Equal(d, body(i, 64)) {
				t.Fatalf("%s message %d: %q", k, i, d)
			}
		}
	}
	if err := rcv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
