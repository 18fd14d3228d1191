package engine_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// hopRewrite counts a hop in x-fedrouter-hops, as transit will.
func hopRewrite(payload []byte, s *wire.Sections) []wire.Annotated {
	hops := uint32(0)
	if v, ok := s.Annotation(payload, "x-fedrouter-hops"); ok {
		d := wire.NewDecoder(v)
		if h := d.Uint(); d.Err() == nil {
			hops = h
		}
	}
	return []wire.Annotated{{Key: "x-fedrouter-hops", Value: wire.AppendUint(nil, hops+1)}}
}

// startForward wires a forwarder from srcAddr on src to dstAddr on dst.
func startForward(t testing.TB, src, dst brokertest.Broker, srcAddr, dstAddr string, credit uint32, fo engine.ForwardOptions) *engine.Forwarder {
	t.Helper()
	ss := session(t, dial(t, src, engine.Options{}), engine.SessionOptions{})
	ds := session(t, dial(t, dst, engine.Options{}), engine.SessionOptions{})
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: srcAddr, Credit: credit},
		ds, engine.SenderOptions{Address: dstAddr}, fo)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// waitSettled waits until the forwarder settled n at the source,
// woken by its progress rather than polling.
func waitSettled(t testing.TB, f *engine.Forwarder, n uint64, within time.Duration) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for f.Stats().Settled < n {
		select {
		case <-f.Progress():
		case <-deadline.C:
			t.Fatalf("forwarder after %v: %+v, err %v", within, f.Stats(), f.Err())
		}
	}
}

// The forwarder moves 1,000 messages byte for byte between two brokers,
// counting a hop in the message annotations, settles the source only
// after the destination accepted, in ranges, and leaves the source empty.
// Proton C grants a sender 5 credits: the source is asked for no more.
func TestConformanceForward(t *testing.T) {
	for _, pair := range [][2]string{{"rabbit1", "rabbit2"}, {"qpidd1", "qpidd2"}, {"rabbit1", "qpidd1"}, {"qpidd1", "proton1"}} {
		t.Run(pair[0]+"-"+pair[1], func(t *testing.T) {
			bs := brokertest.Require(t, pair[0], pair[1])
			src, dst := bs[0], bs[1]
			srcAddr, dstAddr := queue(t, src), queue(t, dst)
			const n = 1000
			fill(t, src, srcAddr, n, 64)
			f := startForward(t, src, dst, srcAddr, dstAddr, 200, engine.ForwardOptions{Rewrite: hopRewrite})
			waitSettled(t, f, n, 30*time.Second)
			col := newCollector(n)
			if _, err := session(t, dial(t, dst, engine.Options{}), engine.SessionOptions{}).NewReceiver(t.Context(),
				engine.ReceiverOptions{Address: dstAddr, Credit: 200, OnMessage: col.onMessage}); err != nil {
				t.Fatal(err)
			}
			for i, p := range col.take(t, n, 20*time.Second) {
				got, err := dataOf(p)
				if err != nil || !bytes.Equal(got, body(i, 64)) {
					t.Fatalf("message %d: %v", i, err)
				}
				s, _ := wire.ScanSections(p)
				v, ok := s.Annotation(p, "x-fedrouter-hops")
				if d := wire.NewDecoder(v); !ok || d.Uint() != 1 {
					t.Fatalf("message %d: hops %v % x", i, ok, v)
				}
			}
			st := f.Stats()
			t.Logf("%+v", st)
			if st.Forwarded != n || st.Settled != n || st.Released != 0 || st.Refused != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// A message whose annotation keys break the rules (a string key) is
// rejected at the source with amqp:decode-error, and the messages around
// it still cross: a poison message does not stall the forwarder.
func TestForwardRefusesBadAnnotations(t *testing.T) {
	bs := brokertest.Require(t, "qpidd1", "qpidd2")
	src, dst := bs[0], bs[1]
	srcAddr, dstAddr := queue(t, src), queue(t, dst)
	out := newOutcomes(3)
	snd, err := session(t, dial(t, src, engine.Options{}), engine.SessionOptions{}).NewSender(t.Context(),
		engine.SenderOptions{Address: srcAddr, OnSettled: out.onSettled})
	if err != nil {
		t.Fatal(err)
	}
	bad := wire.AppendDescriptor(nil, wire.DescMessageAnnotations)
	bad, _ = wire.AppendValue(bad, wire.Map{{Key: "not-a-symbol", Value: "v"}})
	bad = append(bad, encodeMessage("bad", []byte("bad"))...)
	for _, p := range [][]byte{encodeMessage("0", body(0, 64)), bad, encodeMessage("2", body(2, 64))} {
		if _, err := snd.Send(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	out.wait(t, 3, 20*time.Second)
	f := startForward(t, src, dst, srcAddr, dstAddr, 10, engine.ForwardOptions{})
	brokertest.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
		if st := f.Stats(); st.Settled != 2 || st.Refused != 1 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
}
