package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// link is what senders and receivers share: identity, attach and
// detach.
type link struct {
	s       *Session
	name    string
	address string
	handle  uint32
	role    bool

	// Set by the reader before attached is closed.
	remoteHandle uint32
	remote       wire.Attach

	attached    chan struct{}
	detachRecvd chan struct{}
	detachSent  bool // under s.mu
	done        chan struct{}
	doneOnce    sync.Once
	err         error // set before done is closed

	receiver *Receiver
	sender   *Sender
}

func newLink(s *Session, name, address string, role bool) link {
	return link{
		s: s, name: name, address: address, role: role,
		attached:    make(chan struct{}),
		detachRecvd: make(chan struct{}),
		done:        make(chan struct{}),
	}
}

// Done is closed when the link has ended; Err says why.
func (l *link) Done() <-chan struct{} { return l.done }

// Err says why the link ended (nil while it runs).
func (l *link) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

// Name is the link's name.
func (l *link) Name() string { return l.name }

// Remote is the peer's attach.
func (l *link) Remote() wire.Attach {
	<-l.attached
	return l.remote
}

func (l *link) finish(err error) {
	l.doneOnce.Do(func() {
		l.err = err
		close(l.done)
		if l.receiver != nil {
			l.receiver.stopTimer()
		}
	})
}

// attach registers the link under a free handle, sends a, and waits for
// the peer's attach; a peer that refuses (a null terminus, then a
// detach) gives a *LinkError carrying its error.
func (l *link) attach(ctx context.Context, a *wire.Attach) error {
	s := l.s
	s.mu.Lock()
	h, ok := s.freeHandle()
	if ok {
		l.handle = h
		s.links[h] = l
		s.pending[l.name] = l
	}
	s.mu.Unlock()
	if !ok {
		return &LinkError{Name: l.name, Address: l.address, Err: fmt.Errorf("all %d handles the peer allows are in use", uint64(s.peerHandleMax)+1)}
	}
	a.Handle = h
	s.c.sendFrame(s.ch, func(b []byte) []byte { return wire.AppendAttach(b, a) })
	select {
	case <-l.attached:
	case <-l.done:
		return l.err
	case <-ctx.Done():
		l.detach(nil)
		l.finish(&LinkError{Name: l.name, Address: l.address, Err: ctx.Err()})
		return l.err
	}
	refused := (l.role == wire.RoleReceiver && l.remote.Source == nil) ||
		(l.role == wire.RoleSender && l.remote.Target == nil)
	if !refused {
		return nil
	}
	// The peer sends its detach (with the reason) right after.
	select {
	case <-l.done:
	case <-ctx.Done():
		l.finish(&LinkError{Name: l.name, Address: l.address, Err: fmt.Errorf("the peer refused the attach: %w", ctx.Err())})
	}
	return l.err
}

// freeHandle is the lowest handle not in use; s.mu is held.
func (s *Session) freeHandle() (uint32, bool) {
	for h := uint32(0); h <= s.peerHandleMax && h <= s.c.opts.HandleMax; h++ {
		if _, used := s.links[h]; !used {
			return h, true
		}
	}
	return 0, false
}

// detach sends our detach (closing the link) unless one was sent.
func (l *link) detach(e *wire.Error) {
	s := l.s
	s.mu.Lock()
	already := l.detachSent
	l.detachSent = true
	s.mu.Unlock()
	if !already {
		det := wire.Detach{Handle: l.handle, Closed: true, Error: e}
		s.c.sendFrame(s.ch, func(b []byte) []byte { return wire.AppendDetach(b, &det) })
	}
}

// answerWait bounds waiting for the peer's detach or end whatever the
// caller's context: a peer that never answers must not hang a router
// that closes a link on a context without a deadline.
const answerWait = 30 * time.Second

// close detaches and waits for the peer's detach (bounded by ctx and by
// answerWait). A peer's error in its detach is returned.
func (l *link) close(ctx context.Context) error {
	l.detach(nil)
	ctx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	select {
	case <-l.detachRecvd:
	case <-l.s.done:
	case <-l.s.c.done:
	case <-ctx.Done():
	}
	l.finish(&LinkError{Name: l.name, Address: l.address, Err: ErrClosed})
	l.forget()
	if le, ok := l.err.(*LinkError); ok && le.Remote != nil {
		return l.err
	}
	return nil
}

// forget frees the handle once both detaches were exchanged.
func (l *link) forget() {
	s := l.s
	s.mu.Lock()
	if s.links[l.handle] == l {
		delete(s.links, l.handle)
	}
	delete(s.pending, l.name)
	if l.sender != nil {
		for i, sn := range s.senders {
			if sn == l.sender {
				s.senders = append(s.senders[:i], s.senders[i+1:]...)
				break
			}
		}
	}
	s.mu.Unlock()
}
