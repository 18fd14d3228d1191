package amqp

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWriteBuffer bounds the bytes a connection holds written by
// go-amqp and not yet on the wire (ConnOptions.WriteBuffer).
const DefaultWriteBuffer = 64 << 10

// closeLinger bounds how long Close waits for buffered bytes (go-amqp's
// closing performative, the last dispositions) to reach the peer.
const closeLinger = 2 * time.Second

// WriteStats counts, over every connection of the process, the writes
// go-amqp made (a frame each, mostly) and the system calls that put them
// on the wire: their ratio is how well writes coalesce.
type WriteStats struct{ Writes, SystemCalls uint64 }

var writeStats struct{ writes, calls atomic.Uint64 }

// ReadWriteStats returns the process's WriteStats so far.
func ReadWriteStats() WriteStats {
	return WriteStats{Writes: writeStats.writes.Load(), SystemCalls: writeStats.calls.Load()}
}

// coalescingConn is a net.Conn whose writes are copied into a buffer and
// put on the wire by a goroutine of its own, so that the frames go-amqp
// writes one system call each (every transfer, every disposition, every
// flow) share system calls whenever they come faster than the kernel
// takes them. The profile showed a write(2) per frame as the largest
// single cost of forwarding (docs/performance.md).
//
// Flushing: the flusher is woken by every Write and writes at once all
// that is pending; bytes never wait for a timer or for more bytes. While
// it is in the kernel, later Writes accumulate and go out together with
// its next call. Woken goroutines run on the waker's processor first, so
// the flusher usually runs when go-amqp's writer goroutine parks: when
// the writer goes idle.
//
// Bound: at most limit bytes are pending (more only as one oversized
// write into an empty buffer: a frame is never split). A Write that would
// go past it waits for the flusher — back-pressure to go-amqp's writer,
// as a full socket buffer would give. That wait is bounded by the write
// deadline go-amqp sets before every frame, which the flusher's write
// obeys.
//
// Errors: the first write error is kept and returned by every later
// Write; the underlying connection is closed at once so that go-amqp's
// reader fails too and every link learns of the loss (bytes accepted by
// Write but not written are lost with the connection: the frames were
// transfers or settlements of unsettled deliveries, which the brokers
// redeliver — at-least-once holds).
//
// Reads, addresses and read deadlines go straight to the wrapped
// connection.
type coalescingConn struct {
	net.Conn
	limit  int
	linger time.Duration // closeLinger; shorter in tests

	mu      sync.Mutex
	space   *sync.Cond    // signalled when the flusher takes the buffer, fails or the conn closes
	pending []byte        // guarded by mu: written by go-amqp, not yet taken by the flusher
	spare   []byte        // guarded by mu: the buffer the flusher last wrote, for reuse
	err     error         // guarded by mu: the first write error; sticky
	closed  bool          // guarded by mu: Close was called
	wake    chan struct{} // capacity 1: "something is pending, or closing"
	done    chan struct{} // closed when the flusher has returned

	closeOnce sync.Once
	closeErr  error
}

// newCoalescingConn wraps c and starts its flusher; Close stops it.
func newCoalescingConn(c net.Conn, limit int) *coalescingConn {
	if limit <= 0 {
		limit = DefaultWriteBuffer
	}
	w := &coalescingConn{Conn: c, limit: limit, linger: closeLinger, wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.space = sync.NewCond(&w.mu)
	go w.flusher()
	return w
}

// Write copies p into the buffer (waiting for room if it is full) and
// returns; the flusher writes it.
func (w *coalescingConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	for w.err == nil && !w.closed && len(w.pending) > 0 && len(w.pending)+len(p) > w.limit {
		w.space.Wait()
	}
	if err := w.errLocked(); err != nil {
		w.mu.Unlock()
		return 0, err
	}
	w.pending = append(w.pending, p...)
	w.mu.Unlock()
	writeStats.writes.Add(1)
	w.signal()
	return len(p), nil
}

func (w *coalescingConn) errLocked() error {
	switch {
	case w.err != nil:
		return w.err
	case w.closed:
		return net.ErrClosed
	}
	return nil
}

func (w *coalescingConn) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending: it will see these bytes too
	}
}

// flusher writes what is pending until the connection fails or is closed
// with nothing left to write. It owns the buffer it is writing: Writes
// meanwhile append to the other one.
func (w *coalescingConn) flusher() {
	defer close(w.done)
	for range w.wake {
		for {
			w.mu.Lock()
			out := w.pending
			if len(out) == 0 || w.err != nil {
				stop := w.closed || w.err != nil
				w.mu.Unlock()
				if stop {
					return
				}
				break // nothing pending: wait for the next Write
			}
			w.pending = w.spare[:0]
			w.spare = nil
			w.space.Broadcast()
			w.mu.Unlock()

			err := writeAll(w.Conn, out) // no lock held: Writes go on meanwhile

			w.mu.Lock()
			if cap(out) <= 2*w.limit { // keep a normal-sized buffer, drop an outsized one
				w.spare = out[:0]
			}
			if err != nil && w.err == nil {
				w.err = err
				w.space.Broadcast()
			}
			w.mu.Unlock()
			if err != nil {
				_ = w.Conn.Close() // make the reader fail too; err is what Writes report
				return
			}
		}
	}
}

// writeAll writes b in full: a net.Conn returns an error with a short
// write, but a short write without one must not be taken for success.
func writeAll(c net.Conn, b []byte) error {
	for len(b) > 0 {
		writeStats.calls.Add(1)
		n, err := c.Write(b)
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		b = b[n:]
	}
	return nil
}

// Close lets the flusher write what is pending (at most closeLinger),
// then closes the wrapped connection. Writes after Close fail with
// net.ErrClosed. Idempotent; safe concurrently with Write.
func (w *coalescingConn) Close() error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.space.Broadcast()
		w.mu.Unlock()
		// Bound the flusher's last write: a peer that reads nothing must
		// not hold Close up.
		_ = w.Conn.SetWriteDeadline(time.Now().Add(w.linger))
		w.signal()
		<-w.done
		w.closeErr = w.Conn.Close()
	})
	return w.closeErr
}
