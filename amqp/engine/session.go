package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Session is one AMQP session. Its mutex guards the session's flow state
// and that of all its links (credit, delivery counts, settlement runs),
// so that a transfer's ids are taken and its frames appended in one
// critical section; no I/O and no callback runs under it.
type Session struct {
	c  *Conn
	ch uint16 // local channel
	// remoteCh and the maps below marked reader are written by the
	// reader goroutine only.
	remoteCh uint16

	mu sync.Mutex
	// Outgoing transfers: next transfer-id, the peer's remaining
	// incoming window, the next delivery-id.
	nextOutgoingID       uint32
	remoteIncomingWindow uint32
	nextDeliveryID       uint32
	// Incoming transfers: the next transfer-id expected, the window left
	// and the window we reopen to.
	nextIncomingID    uint32
	incomingWindow    uint32
	incomingWindowMax uint32
	peerHandleMax     uint32
	links             map[uint32]*link // by local handle
	pending           map[string]*link // attached by us, waiting for the peer's attach
	senders           []*Sender
	ended             bool // end sent

	byRemote  map[uint32]*link // reader: links by the peer's handle
	rxSenders []*Sender        // reader: senders to tell, reused

	begun    chan struct{}
	done     chan struct{}
	doneOnce sync.Once
	err      error // set before done is closed
	endRecvd chan struct{}
}

// NewSession begins a session and waits for the peer's begin.
func (c *Conn) NewSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	if opts.IncomingWindow == 0 {
		opts.IncomingWindow = 2048
	}
	s := &Session{
		c:                 c,
		incomingWindow:    opts.IncomingWindow,
		incomingWindowMax: opts.IncomingWindow,
		links:             map[uint32]*link{},
		pending:           map[string]*link{},
		byRemote:          map[uint32]*link{},
		begun:             make(chan struct{}),
		done:              make(chan struct{}),
		endRecvd:          make(chan struct{}),
	}
	c.mu.Lock()
	ch, ok := c.freeChannel()
	if ok {
		s.ch = ch
		c.sessions[ch] = s
	}
	c.mu.Unlock()
	if !ok {
		return nil, &SessionError{Err: fmt.Errorf("all %d channels the peer allows are in use", uint32(c.peer.ChannelMax)+1)}
	}
	begin := wire.Begin{NextOutgoingID: 0, IncomingWindow: s.incomingWindow, OutgoingWindow: 1 << 31, HandleMax: c.opts.HandleMax}
	c.sendFrame(s.ch, func(b []byte) []byte { return wire.AppendBegin(b, &begin) })
	select {
	case <-s.begun:
		return s, nil
	case <-s.done:
		return nil, s.err
	case <-c.done:
		return nil, &SessionError{Err: c.err}
	case <-ctx.Done():
		s.abandon(ctx.Err())
		return nil, &SessionError{Err: ctx.Err()}
	}
}

// freeChannel finds the lowest channel the peer allows that is free;
// c.mu is held.
func (c *Conn) freeChannel() (uint16, bool) {
	for ch := uint32(0); ch <= uint32(c.peer.ChannelMax); ch++ {
		if _, used := c.sessions[uint16(ch)]; !used {
			return uint16(ch), true
		}
	}
	return 0, false
}

// Done is closed when the session has ended; Err says why.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why the session ended (nil while it runs).
func (s *Session) Err() error {
	select {
	case <-s.done:
		return s.err
	case <-s.c.done:
		return &SessionError{Err: s.c.err}
	default:
		return nil
	}
}

// End ends the session and waits for the peer's end (bounded by ctx and
// by answerWait, after which it says so). A peer that never answers
// leaves the channel taken, never reused on this connection.
func (s *Session) End(ctx context.Context) error {
	s.sendEnd(nil)
	ctx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	var unanswered error
	select {
	case <-s.endRecvd:
	case <-s.c.done:
	case <-ctx.Done():
		unanswered = &SessionError{Err: fmt.Errorf("the peer did not answer our end: %w", ctx.Err())}
	}
	s.finish(&SessionError{Err: ErrClosed})
	if se, ok := s.err.(*SessionError); ok && se.Remote != nil {
		return s.err
	}
	return unanswered
}

func (s *Session) sendEnd(e *wire.Error) {
	s.mu.Lock()
	already := s.ended
	s.ended = true
	s.mu.Unlock()
	if !already {
		s.c.sendFrame(s.ch, func(b []byte) []byte { return wire.AppendEnd(b, &wire.End{Error: e}) })
	}
}

// abandon ends a session whose begin was never answered in time.
func (s *Session) abandon(err error) {
	s.sendEnd(nil)
	s.finish(&SessionError{Err: err})
}

// finish marks the session and its links ended (the first reason wins)
// and frees the channel once the peer's end has come (or never will).
func (s *Session) finish(err error) {
	s.doneOnce.Do(func() {
		s.err = err
		close(s.done)
		s.mu.Lock()
		links := make([]*link, 0, len(s.links))
		for _, l := range s.links {
			links = append(links, l)
		}
		s.mu.Unlock()
		for _, l := range links {
			l.finish(&LinkError{Name: l.name, Address: l.address, Err: err})
		}
	})
}

// endSessions ends every session the peer has begun and not ended, after
// sending its receivers' pending settlements, and waits for the peer's
// ends until ctx ends (Close).
//
// qpidd (seen with 1.40; docs/brokers.md) cancels a connection's consumers
// only when its socket closes, in the same moment as it frees the
// connection's I/O handler; a message arriving for such a consumer at
// that moment on another connection's thread notifies the freed handler
// and the broker segfaults (OutgoingFromQueue::notify). Ended first, the
// sessions' links are cancelled while the connection still stands.
func (c *Conn) endSessions(ctx context.Context) {
	select {
	case <-c.done:
		return // the socket is going or gone: nothing can be ended
	default:
	}
	c.mu.Lock()
	open := make([]*Session, 0, len(c.sessions))
	for _, s := range c.sessions {
		open = append(open, s)
	}
	c.mu.Unlock()
	waiting := open[:0]
	for _, s := range open {
		select {
		case <-s.begun:
		default:
			continue // never begun on the peer's side: nothing attached there
		}
		select {
		case <-s.endRecvd:
			continue // the peer has ended it
		default:
		}
		for _, r := range s.receivers() {
			r.Flush()
		}
		s.sendEnd(nil)
		waiting = append(waiting, s)
	}
	for _, s := range waiting {
		select {
		case <-s.endRecvd:
		case <-c.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// receivers lists the session's receiving links.
func (s *Session) receivers() []*Receiver {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []*Receiver
	for _, l := range s.links {
		if l.receiver != nil {
			rs = append(rs, l.receiver)
		}
	}
	return rs
}

// release frees the local channel (called by the reader once both ends
// are ended).
func (s *Session) release() {
	s.c.mu.Lock()
	if s.c.sessions[s.ch] == s {
		delete(s.c.sessions, s.ch)
	}
	s.c.mu.Unlock()
}

// flowLocked appends a session flow (with link fields when l is set) to
// b; s.mu is held.
func (s *Session) flowLocked(b []byte, f *wire.Flow) []byte {
	f.NextIncomingID, f.HasNextIncomingID = s.nextIncomingID, true
	f.IncomingWindow = s.incomingWindow
	f.NextOutgoingID = s.nextOutgoingID
	f.OutgoingWindow = 1 << 31
	b, mark := wire.BeginFrame(b, wire.FrameAMQP, s.ch)
	return wire.EndFrame(wire.AppendFlow(b, f), mark)
}
