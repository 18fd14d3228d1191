package engine

import (
	"fmt"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// The session's handling of what the peer sends (reader goroutine).

// onFlow applies a flow to the session window and, when it names a
// handle, to that link; senders are woken and told after s.mu is let go.
func (s *Session) onFlow(f *wire.Flow) error {
	var l *link
	if f.HasHandle {
		if l = s.byRemote[f.Handle]; l == nil {
			return violate(condUnattached, "flow on handle %d, which is not attached", f.Handle)
		}
	}
	s.mu.Lock()
	next := uint32(0)
	if f.HasNextIncomingID {
		next = f.NextIncomingID
	}
	s.remoteIncomingWindow = next + f.IncomingWindow - s.nextOutgoingID
	if int32(s.remoteIncomingWindow) < 0 {
		s.remoteIncomingWindow = 0
	}
	var b []byte
	locked := false
	if l != nil && l.sender != nil {
		b, locked = s.c.w.lock(), true
		b = l.sender.onFlowLocked(f, b)
	} else if f.Echo {
		b, locked = s.c.w.lock(), true
		b = s.flowLocked(b, &wire.Flow{})
	}
	if locked {
		s.c.w.unlock(b)
	}
	s.rxSenders = append(s.rxSenders[:0], s.senders...)
	for _, sn := range s.rxSenders {
		sn.avail.Store(min(sn.credit, s.remoteIncomingWindow))
	}
	s.mu.Unlock()
	for _, sn := range s.rxSenders {
		sn.signal()
		if sn.opts.OnCredit != nil {
			sn.opts.OnCredit()
		}
	}
	return nil
}

// onDisposition reports the peer receiver's outcomes to our senders,
// and settles back what the peer left unsettled.
func (s *Session) onDisposition(p *wire.Disposition) {
	if p.Role != wire.RoleReceiver {
		return // the peer sender settling what we received: nothing kept here
	}
	last := p.First
	if p.HasLast {
		last = p.Last
	}
	if !p.Settled && p.State.Kind != wire.StateNone && p.State.Kind != wire.StateReceived {
		back := wire.Disposition{Role: wire.RoleSender, First: p.First, Last: last, HasLast: true, Settled: true, State: p.State}
		s.c.sendFrame(s.ch, func(b []byte) []byte { return wire.AppendDisposition(b, &back) })
	}
	s.mu.Lock()
	s.rxSenders = append(s.rxSenders[:0], s.senders...)
	s.mu.Unlock()
	for _, sn := range s.rxSenders {
		if sn.opts.OnSettled != nil {
			sn.opts.OnSettled(p.First, last, &p.State)
		}
	}
}

// onAttach matches the peer's attach to the link we attached.
func (s *Session) onAttach(a *wire.Attach) error {
	if a.Handle > s.c.opts.HandleMax {
		return violate(condFramingError, "attach with handle %d above our handle-max %d", a.Handle, s.c.opts.HandleMax)
	}
	if s.byRemote[a.Handle] != nil {
		return violate("amqp:session:handle-in-use", "attach with handle %d, already in use", a.Handle)
	}
	s.mu.Lock()
	l := s.pending[a.Name]
	delete(s.pending, a.Name)
	s.mu.Unlock()
	if l == nil {
		return violate(condNotImplemented, "a link attached by the peer (%q): this engine only attaches its own", a.Name)
	}
	if a.Role == l.role {
		return violate(condInvalidField, "attach of %q with the same role as ours", a.Name)
	}
	l.remoteHandle = a.Handle
	l.remote = *a
	s.byRemote[a.Handle] = l
	close(l.attached)
	return nil
}

// onDetach ends the link, answers the detach if we had not sent ours,
// and frees the handle.
func (s *Session) onDetach(det *wire.Detach) error {
	l := s.byRemote[det.Handle]
	if l == nil {
		return violate(condUnattached, "detach of handle %d, which is not attached", det.Handle)
	}
	delete(s.byRemote, det.Handle)
	l.detach(nil)
	var err error
	if det.Error != nil {
		err = &LinkError{Name: l.name, Address: l.address, Remote: det.Error}
	} else {
		err = &LinkError{Name: l.name, Address: l.address, Err: fmt.Errorf("detached by the peer: %w", ErrClosed)}
	}
	l.finish(err)
	close(l.detachRecvd)
	l.forget()
	return nil
}

// onEnd ends the session with the peer's error, answering its end.
func (s *Session) onEnd(e *wire.End) {
	close(s.endRecvd)
	s.sendEnd(nil)
	var err error
	if e.Error != nil {
		err = &SessionError{Remote: e.Error}
	} else {
		err = &SessionError{Err: fmt.Errorf("ended by the peer: %w", ErrClosed)}
	}
	s.finish(err)
	delete(s.c.byRemote, s.remoteCh)
	s.release()
}
