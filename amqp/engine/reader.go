package engine

import (
	"errors"
	"fmt"
	"net"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// rx holds the reader goroutine's decoded performatives, reused for
// every frame so that decoding the hot ones allocates nothing.
type rx struct {
	transfer wire.Transfer
	flow     wire.Flow
	disp     wire.Disposition
}

// readLoop is the connection's reader goroutine: it reads every frame,
// dispatches it, and on the first error ends the connection.
func (c *Conn) readLoop() {
	defer c.wg.Done()
	var scratch rx
	err := c.readFrames(&scratch)
	select {
	case <-c.done:
	default:
		var v *violation
		var ne net.Error
		switch {
		case errors.As(err, &v), errors.Is(err, wire.ErrDecode), errors.Is(err, wire.ErrFrame):
			c.fail(err)
		case errors.As(err, &ne) && ne.Timeout():
			c.fail(&violation{cond: condResourceLimit, msg: fmt.Sprintf("%v (%v)", ErrIdleTimeout, err), cause: ErrIdleTimeout})
		default:
			c.shutdown(c.wrapErr(err))
		}
	}
	c.mu.Lock()
	sessions := make([]*Session, 0, len(c.sessions))
	for _, s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	for _, s := range sessions {
		s.finish(&SessionError{Err: c.err})
	}
}

func (c *Conn) wrapErr(err error) error {
	var ce *ConnError
	if errors.As(err, &ce) {
		return err
	}
	return &ConnError{Err: err}
}

func (c *Conn) readFrames(x *rx) error {
	for {
		h, body, err := c.fr.Next()
		if err != nil {
			return err
		}
		c.frames.Add(1)
		if len(body) == 0 {
			continue // a heartbeat
		}
		if h.Type != wire.FrameAMQP {
			return violate(condFramingError, "a SASL frame after open")
		}
		if err := c.dispatch(h.Channel, body, x); err != nil {
			return err
		}
	}
}

// dispatch decodes one performative and acts on it.
func (c *Conn) dispatch(ch uint16, body []byte, x *rx) error {
	d := wire.NewDecoder(body)
	desc := d.Descriptor()
	if err := d.Err(); err != nil {
		return err
	}
	switch desc {
	case wire.DescClose:
		var cl wire.Close
		d.Close(&cl)
		c.onClose(&cl)
		return d.Err()
	case wire.DescBegin:
		var b wire.Begin
		d.Begin(&b)
		if err := d.Err(); err != nil {
			return err
		}
		return c.onBegin(ch, &b)
	case wire.DescOpen:
		return violate(condNotAllowed, "a second open")
	}
	s := c.byRemote[ch]
	if s == nil {
		return violate(condNotAllowed, "performative 0x%x on channel %d, which has no session", desc, ch)
	}
	return s.dispatch(desc, &d, x)
}

// onClose answers the peer's close and ends the connection with its error.
func (c *Conn) onClose(cl *wire.Close) {
	select {
	case <-c.remoteClosed:
		return
	default:
		close(c.remoteClosed)
	}
	c.sendFrame(0, func(b []byte) []byte { return wire.AppendClose(b, &wire.Close{}) })
	c.shutdown(&ConnError{Remote: cl.Error})
}

// onBegin matches the peer's begin to the session we began.
func (c *Conn) onBegin(ch uint16, b *wire.Begin) error {
	if ch > c.opts.ChannelMax {
		return violate(condFramingError, "begin on channel %d above our channel-max %d", ch, c.opts.ChannelMax)
	}
	if !b.HasRemoteChannel {
		return violate(condNotImplemented, "a session begun by the peer (this engine only begins its own)")
	}
	c.mu.Lock()
	s := c.sessions[b.RemoteChannel]
	c.mu.Unlock()
	if s == nil || c.byRemote[ch] != nil {
		return violate(condNotAllowed, "begin for channel %d, which we did not begin, on channel %d", b.RemoteChannel, ch)
	}
	s.mu.Lock()
	s.remoteCh = ch
	s.remoteIncomingWindow = b.IncomingWindow
	s.nextIncomingID = b.NextOutgoingID
	s.peerHandleMax = b.HandleMax
	s.mu.Unlock()
	c.byRemote[ch] = s
	close(s.begun)
	return nil
}

// dispatch acts on a session's performative (reader goroutine).
func (s *Session) dispatch(desc uint64, d *wire.Decoder, x *rx) error {
	switch desc {
	case wire.DescTransfer:
		d.Transfer(&x.transfer)
		if err := d.Err(); err != nil {
			return err
		}
		l := s.byRemote[x.transfer.Handle]
		if l == nil || l.receiver == nil {
			return violate(condUnattached, "transfer on handle %d, which no receiver of ours holds", x.transfer.Handle)
		}
		return s.linkErr(l.receiver.onTransfer(&x.transfer))
	case wire.DescFlow:
		d.Flow(&x.flow)
		if err := d.Err(); err != nil {
			return err
		}
		return s.onFlow(&x.flow)
	case wire.DescDisposition:
		d.Disposition(&x.disp)
		if err := d.Err(); err != nil {
			return err
		}
		s.onDisposition(&x.disp)
		return nil
	case wire.DescAttach:
		var a wire.Attach
		d.Attach(&a)
		if err := d.Err(); err != nil {
			return err
		}
		return s.onAttach(&a)
	case wire.DescDetach:
		var det wire.Detach
		d.Detach(&det)
		if err := d.Err(); err != nil {
			return err
		}
		return s.onDetach(&det)
	case wire.DescEnd:
		var e wire.End
		d.End(&e)
		if err := d.Err(); err != nil {
			return err
		}
		s.onEnd(&e)
		return nil
	}
	return violate(condNotAllowed, "unexpected performative 0x%x on a session", desc)
}

// linkErr turns a link-level violation into a detach of that link and
// keeps the connection; other errors end the connection.
func (s *Session) linkErr(err error) error {
	lv, ok := err.(*linkViolation)
	if !ok {
		return err
	}
	e := &wire.Error{Condition: lv.cond, Description: lv.msg}
	lv.l.detach(e)
	lv.l.finish(&LinkError{Name: lv.l.name, Address: lv.l.address, Err: errors.New(lv.msg)})
	return nil
}
