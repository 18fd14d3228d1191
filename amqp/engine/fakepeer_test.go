package engine_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// peer is a scripted AMQP peer on loopback for protocol edge cases no
// real broker produces (a peer that lies).
type peer struct {
	t  *testing.T
	c  net.Conn
	fr *wire.FrameReader
}

// fakePeer listens on loopback and runs script on the first connection;
// the test's cleanup waits for it.
func fakePeer(t *testing.T, script func(p *peer)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		script(&peer{t: t, c: c, fr: wire.NewFrameReader(c, 1<<20)})
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// open answers the protocol header and our open with its own.
func (p *peer) open(o wire.Open) {
	if _, err := p.fr.ReadProtoHeader(); err != nil {
		p.t.Errorf("peer: header: %v", err)
		return
	}
	p.raw(wire.ProtoAMQP[:])
	p.expect(wire.DescOpen)
	o.ContainerID = "fake"
	p.send(0, func(b []byte) []byte { return wire.AppendOpen(b, &o) })
}

// expect reads frames until one with the descriptor want, and returns
// its decoder and channel (nil at the end of the stream).
func (p *peer) expect(want uint64) (*wire.Decoder, uint16) {
	for {
		h, body, err := p.fr.Next()
		if err != nil {
			return nil, 0
		}
		if len(body) == 0 {
			continue
		}
		d := wire.NewDecoder(body)
		if d.Descriptor() == want {
			return &d, h.Channel
		}
	}
}

func (p *peer) send(ch uint16, perf func([]byte) []byte) {
	b, mark := wire.BeginFrame(nil, wire.FrameAMQP, ch)
	p.raw(wire.EndFrame(perf(b), mark))
}

func (p *peer) raw(b []byte) { _, _ = p.c.Write(b) }

// closeError reads our close and returns its condition.
func (p *peer) closeError() string {
	d, _ := p.expect(wire.DescClose)
	if d == nil {
		return "(no close)"
	}
	var cl wire.Close
	d.Close(&cl)
	if cl.Error == nil {
		return "(no error)"
	}
	return cl.Error.Condition
}

// beginAttach answers our begin and our attach (with handle h).
func (p *peer) beginAttach(h uint32) { p.beginAttachWith(h, nil) }

// beginAttachWith is beginAttach, the answering attach changed by edit
// (nil: none) first.
func (p *peer) beginAttachWith(h uint32, edit func(*wire.Attach)) {
	_, ch := p.expect(wire.DescBegin)
	p.send(ch, func(b []byte) []byte {
		return wire.AppendBegin(b, &wire.Begin{RemoteChannel: ch, HasRemoteChannel: true, IncomingWindow: 100, OutgoingWindow: 100, HandleMax: 10})
	})
	d, _ := p.expect(wire.DescAttach)
	if d == nil {
		return
	}
	var a wire.Attach
	d.Attach(&a)
	a.Role, a.Handle = !a.Role, h
	if edit != nil {
		edit(&a)
	}
	p.send(ch, func(b []byte) []byte { return wire.AppendAttach(b, &a) })
}

func dialFake(t *testing.T, addr string, opts engine.Options) *engine.Conn {
	t.Helper()
	c, err := engine.Dial(t.Context(), addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func waitDone(t *testing.T, c *engine.Conn) error {
	t.Helper()
	select {
	case <-c.Done():
		return c.Err()
	case <-time.After(10 * time.Second):
		t.Fatal("the connection did not end")
		return nil
	}
}

// A frame header claiming 4 GiB is refused at once, naming the limit,
// and the peer is told framing-error.
func TestPeerFrameOverMaxFrameSize(t *testing.T) {
	cond := make(chan string, 1)
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.raw([]byte{0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0})
		cond <- p.closeError()
	})
	c := dialFake(t, addr, engine.Options{MaxFrameSize: 4096})
	err := waitDone(t, c)
	if !errors.Is(err, wire.ErrFrame) || !strings.Contains(err.Error(), "max-frame-size 4096") {
		t.Fatalf("err %v", err)
	}
	if got := <-cond; got != "amqp:connection:framing-error" {
		t.Fatalf("close condition %q", got)
	}
}

// A begin on a channel above our channel-max is a connection error.
func TestPeerChannelAboveChannelMax(t *testing.T) {
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		_, ch := p.expect(wire.DescBegin)
		p.send(300, func(b []byte) []byte {
			return wire.AppendBegin(b, &wire.Begin{RemoteChannel: ch, HasRemoteChannel: true, IncomingWindow: 1, OutgoingWindow: 1})
		})
		p.closeError()
	})
	c := dialFake(t, addr, engine.Options{ChannelMax: 10})
	if _, err := c.NewSession(t.Context(), engine.SessionOptions{}); err == nil {
		t.Fatal("session begun on a channel above channel-max")
	}
	if err := waitDone(t, c); !errors.Is(err, engine.ErrProtocol) || !strings.Contains(err.Error(), "channel-max 10") {
		t.Fatalf("err %v", err)
	}
}

// An attach with a handle above our handle-max is a connection error.
func TestPeerHandleAboveHandleMax(t *testing.T) {
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(5000)
		p.closeError()
	})
	c := dialFake(t, addr, engine.Options{HandleMax: 7})
	s, err := c.NewSession(t.Context(), engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: "q"}); err == nil {
		t.Fatal("attach accepted with a handle above handle-max")
	}
	if err := waitDone(t, c); !errors.Is(err, engine.ErrProtocol) || !strings.Contains(err.Error(), "handle-max 7") {
		t.Fatalf("err %v", err)
	}
}

// A multi-frame message longer than MaxMessageSize detaches the link
// with message-size-exceeded; the connection stays up.
func TestPeerMessageOverMaxMessageSize(t *testing.T) {
	cond := make(chan string, 1)
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		p.expect(wire.DescFlow)
		for i := 0; i < 5; i++ {
			tr := wire.Transfer{Handle: 0, More: true, DeliveryID: 0, HasDeliveryID: i == 0, DeliveryTag: []byte{1}}
			p.send(0, func(b []byte) []byte { return append(wire.AppendTransfer(b, &tr), make([]byte, 300)...) })
		}
		d, _ := p.expect(wire.DescDetach)
		if d == nil {
			cond <- "(none)"
			return
		}
		var det wire.Detach
		d.Detach(&det)
		if det.Error == nil {
			cond <- "(no error)"
			return
		}
		cond <- det.Error.Condition
		p.expect(wire.DescClose)
		p.send(0, func(b []byte) []byte { return wire.AppendClose(b, &wire.Close{}) })
	})
	c := dialFake(t, addr, engine.Options{})
	_, r := oversizeReceiver(t, c, engine.SessionOptions{})
	if got := <-cond; got != "amqp:link:message-size-exceeded" {
		t.Fatalf("detach condition %q", got)
	}
	<-r.Done()
	if c.Err() != nil {
		t.Fatalf("the connection ended: %v", c.Err())
	}
}

// The peer's close with an error is a *ConnError carrying it.
func TestPeerCloseWithError(t *testing.T) {
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.send(0, func(b []byte) []byte {
			return wire.AppendClose(b, &wire.Close{Error: &wire.Error{Condition: "amqp:connection:forced", Description: "bye"}})
		})
		p.expect(wire.DescClose)
	})
	c := dialFake(t, addr, engine.Options{})
	err := waitDone(t, c)
	var ce *engine.ConnError
	var we *wire.Error
	if !errors.As(err, &ce) || !errors.As(err, &we) || we.Condition != "amqp:connection:forced" {
		t.Fatalf("err %v", err)
	}
}

// With DiscardOversize a message longer than MaxMessageSize is read to its
// end without being kept, delivered marked Oversize with its size, and
// settled by the caller (here rejected, which the peer sees); the link
// stays up and the next message arrives whole.
func TestPeerMessageOverMaxMessageSizeDiscarded(t *testing.T) {
	outcome := make(chan string, 1)
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		p.expect(wire.DescFlow)
		for i := 0; i < 5; i++ {
			tr := wire.Transfer{Handle: 0, More: i < 4, DeliveryID: 0, HasDeliveryID: i == 0, DeliveryTag: []byte{1}}
			p.send(0, func(b []byte) []byte { return append(wire.AppendTransfer(b, &tr), make([]byte, 300)...) })
		}
		tr := wire.Transfer{Handle: 0, DeliveryID: 1, HasDeliveryID: true, DeliveryTag: []byte{2}}
		p.send(0, func(b []byte) []byte { return append(wire.AppendTransfer(b, &tr), "small"...) })
		d, _ := p.expect(wire.DescDisposition)
		if d == nil {
			outcome <- "(none)"
			return
		}
		var disp wire.Disposition
		d.Disposition(&disp)
		outcome <- fmt.Sprintf("%d %s", disp.First, disp.State.Kind)
	})
	c := dialFake(t, addr, engine.Options{})
	s, err := c.NewSession(t.Context(), engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	r, err := s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: "q", MaxMessageSize: 1000, DiscardOversize: true,
		OnMessage: func(d *engine.Delivery) {
			if d.Oversize {
				got <- fmt.Sprintf("oversize %d %v", d.Size, d.Payload == nil)
				d.Receiver.Settle(d.ID, &engine.DeliveryState{Kind: wire.StateRejected})
				return
			}
			got <- string(d.Payload)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != "oversize 1500 true" {
		t.Fatalf("first delivery: %s", g)
	}
	if g := <-got; g != "small" {
		t.Fatalf("second delivery: %s", g)
	}
	if o := <-outcome; o != "0 rejected" {
		t.Fatalf("disposition %q", o)
	}
	if p := r.PeakBuffered(); p > 1000 {
		t.Fatalf("held %d bytes of a message over the 1000-byte limit", p)
	}
}

// oversizeReceiver attaches a receiver with a max-message-size of 1,000
// bytes that fails the test if a message is delivered.
func oversizeReceiver(t *testing.T, c *engine.Conn, so engine.SessionOptions) (*engine.Session, *engine.Receiver) {
	t.Helper()
	s, err := c.NewSession(t.Context(), so)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: "q", MaxMessageSize: 1000,
		OnMessage: func(*engine.Delivery) { t.Error("an oversized message was delivered") }})
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}
