package engine

import (
	"sync"
	"time"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// writer is a connection's outgoing side: callers append encoded frames
// to out under mu (never doing I/O there); the writer goroutine swaps
// out for its spare buffer and writes the whole batch in one call.
type writer struct {
	c     *Conn
	mu    sync.Mutex
	room  sync.Cond // signalled when out was taken or the writer stopped
	out   []byte
	err   error // set when the writer stopped; appends are dropped after
	wake  chan struct{}
	spare []byte // the writer goroutine's
	limit int

	// Counters, under mu: frames are not counted, writes and bytes are.
	writes, bytes uint64
}

func (w *writer) init(c *Conn) {
	w.c = c
	w.room.L = &w.mu
	w.wake = make(chan struct{}, 1)
	w.limit = c.opts.WriteBuffer
}

// lock returns the outgoing buffer to append to; unlock hands it back.
func (w *writer) lock() []byte {
	w.mu.Lock()
	return w.out
}

func (w *writer) unlock(b []byte) {
	if w.err == nil {
		w.out = b
	}
	w.mu.Unlock()
	w.wakeup()
}

func (w *writer) wakeup() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// waitRoom waits, holding no other lock, until n more bytes fit under
// the limit (or the buffer is empty), or the writer has stopped.
func (w *writer) waitRoom(n int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && len(w.out) > 0 && len(w.out)+n > w.limit {
		w.room.Wait()
	}
	return w.err
}

// loop writes batches until the connection is done, then flushes what is
// left (bounded by the write deadline shutdown set) and closes the
// socket, which ends the reader. It also sends heartbeats when nothing
// else went out for half the peer's idle-timeout.
func (w *writer) loop() {
	defer w.c.wg.Done()
	var tick <-chan time.Time
	if w.c.peerIdle > 0 {
		t := time.NewTicker(w.c.peerIdle / 2)
		defer t.Stop()
		tick = t.C
	}
	wrote := false
	for {
		select {
		case <-w.wake:
		case <-tick:
			if !wrote {
				w.mu.Lock()
				w.out = wire.AppendHeartbeat(w.out)
				w.mu.Unlock()
			}
			wrote = false
		case <-w.c.done:
			_, _ = w.flush() // best effort: the connection is ending
			w.stop(ErrClosed)
			_ = w.c.nc.Close()
			return
		}
		if n, err := w.flush(); err != nil {
			w.stop(err)
			w.c.shutdown(&ConnError{Err: err})
		} else if n > 0 {
			wrote = true
		}
	}
}

// flush writes what accumulated, in one call.
func (w *writer) flush() (int, error) {
	w.mu.Lock()
	b := w.out
	w.out = w.spare[:0]
	if len(b) > 0 {
		w.writes++
		w.bytes += uint64(len(b))
	}
	w.mu.Unlock()
	w.room.Broadcast()
	if len(b) == 0 {
		w.spare = b
		return 0, nil
	}
	n, err := w.c.nc.Write(b)
	// Keep a big spare only while it is needed: a 1 MiB message's
	// buffer is not held for the life of the connection.
	if cap(b) <= 4*w.limit {
		w.spare = b[:0]
	} else {
		w.spare = nil
	}
	return n, err
}

func (w *writer) stop(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.out = nil
	w.mu.Unlock()
	w.room.Broadcast()
}

// WriteStats says how many write calls and bytes the connection made.
func (c *Conn) WriteStats() (writes, bytes uint64) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	return c.w.writes, c.w.bytes
}
