package engine_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// A peer that advertises an idle-timeout gets heartbeats from an
// otherwise silent connection.
func TestPeerGetsHeartbeats(t *testing.T) {
	got := make(chan error, 1)
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{IdleTimeout: 200})
		for beats := 0; beats < 3; {
			_ = p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, body, err := p.fr.Next()
			if err != nil {
				got <- err
				return
			}
			if len(body) == 0 {
				beats++
			}
		}
		got <- nil
		p.expect(wire.DescClose)
	})
	dialFake(t, addr, engine.Options{})
	if err := <-got; err != nil {
		t.Fatalf("no heartbeats: %v", err)
	}
}

// Our sender stops at the peer's session incoming window and goes on
// when the peer reopens it: with a window of 2, the peer reads two
// transfers, sees no third, reopens, and so on.
func TestPeerSessionWindowStopsSender(t *testing.T) {
	const n, window = 6, 2
	ids := make(chan uint32, n)
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		_, ch := p.expect(wire.DescBegin)
		p.send(ch, func(b []byte) []byte {
			return wire.AppendBegin(b, &wire.Begin{RemoteChannel: ch, HasRemoteChannel: true, IncomingWindow: window, OutgoingWindow: 100})
		})
		d, _ := p.expect(wire.DescAttach)
		var a wire.Attach
		d.Attach(&a)
		a.Role = !a.Role
		p.send(ch, func(b []byte) []byte { return wire.AppendAttach(b, &a) })
		p.send(ch, func(b []byte) []byte {
			return wire.AppendFlow(b, &wire.Flow{NextIncomingID: 0, HasNextIncomingID: true, IncomingWindow: window, NextOutgoingID: 0, OutgoingWindow: 100,
				Handle: 0, HasHandle: true, DeliveryCount: 0, HasDeliveryCount: true, LinkCredit: 100, HasLinkCredit: true})
		})
		for next := uint32(0); next < n; {
			for i := 0; i < window; i++ {
				d, _ := p.expect(wire.DescTransfer)
				if d == nil {
					return
				}
				var tr wire.Transfer
				d.Transfer(&tr)
				ids <- tr.DeliveryID
				next++
			}
			if next == n {
				break
			}
			// Nothing more may come before the window is reopened.
			_ = p.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			h, body, err := p.fr.Next()
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("a frame beyond the window: %v %+v % x", err, h, body)
				return
			}
			_ = p.c.SetReadDeadline(time.Now().Add(20 * time.Second))
			p.send(ch, func(b []byte) []byte {
				return wire.AppendFlow(b, &wire.Flow{NextIncomingID: next, HasNextIncomingID: true, IncomingWindow: window, NextOutgoingID: 0, OutgoingWindow: 100})
			})
		}
		p.expect(wire.DescClose)
	})
	c := dialFake(t, addr, engine.Options{})
	s, err := c.NewSession(t.Context(), engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snd, err := s.NewSender(t.Context(), engine.SenderOptions{Address: "q"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		if _, err := snd.Send(ctx, encodeMessage("m", []byte{byte(i)})); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for i := uint32(0); i < n; i++ {
		if id := <-ids; id != i {
			t.Fatalf("delivery %d arrived as %d", i, id)
		}
	}
}

// Frames of a delivery the peer sends after our detach (it had not seen
// it yet) still use the session window, which must open again: a peer
// that cannot send the rest of the delivery may never answer our end.
// Without that, the frames below run past the window of 4 and the
// connection ends with window-violation.
func TestPeerFramesAfterDetachReopenWindow(t *testing.T) {
	const window = 4
	ended := make(chan bool, 1)
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		p.expect(wire.DescFlow)
		for i := 0; i < 4*window; i++ {
			tr := wire.Transfer{Handle: 0, More: true, DeliveryID: 0, HasDeliveryID: i == 0, DeliveryTag: []byte{1}}
			p.send(0, func(b []byte) []byte { return append(wire.AppendTransfer(b, &tr), make([]byte, 300)...) })
		}
		p.send(0, func(b []byte) []byte { return wire.AppendDetach(b, &wire.Detach{Handle: 0, Closed: true}) })
		d, _ := p.expect(wire.DescEnd)
		ended <- d != nil
		p.send(0, func(b []byte) []byte { return wire.AppendEnd(b, &wire.End{}) })
		p.expect(wire.DescClose)
		p.send(0, func(b []byte) []byte { return wire.AppendClose(b, &wire.Close{}) })
	})
	c := dialFake(t, addr, engine.Options{})
	s, r := oversizeReceiver(t, c, engine.SessionOptions{IncomingWindow: window})
	<-r.Done()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.End(ctx); err != nil {
		t.Fatalf("end: %v", err)
	}
	if !<-ended {
		t.Fatalf("the peer got no end; the connection: %v", c.Err())
	}
	if c.Err() != nil {
		t.Fatalf("the connection ended: %v", c.Err())
	}
}

// A peer that never answers our end: End returns when its context ends
// and says the end went unanswered (never hangs, never claims success).
func TestPeerEndUnanswered(t *testing.T) {
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		_, ch := p.expect(wire.DescBegin)
		p.send(ch, func(b []byte) []byte {
			return wire.AppendBegin(b, &wire.Begin{RemoteChannel: ch, HasRemoteChannel: true, IncomingWindow: 100, OutgoingWindow: 100})
		})
		p.expect(wire.DescEnd)
		p.expect(wire.DescClose)
		p.send(0, func(b []byte) []byte { return wire.AppendClose(b, &wire.Close{}) })
	})
	c := dialFake(t, addr, engine.Options{})
	s, err := c.NewSession(t.Context(), engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err = s.End(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("End with no answer: %v, want an error saying so", err)
	}
	<-s.Done()
}
