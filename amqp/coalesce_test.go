package amqp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// fakeNet is the connection under a coalescingConn: it records what is
// written, can hold writes until released, cut them short, or fail them.
type fakeNet struct {
	net.Conn // nil: only what coalescingConn calls is implemented

	mu       sync.Mutex
	got      bytes.Buffer
	sizes    []int
	closed   bool
	deadline time.Time

	hold    chan struct{} // when non-nil, each Write waits for it to be closed
	maxN    int           // > 0: write at most this many bytes per call
	zeroN   bool          // write nothing and report no error
	failErr error         // every Write fails with it
	entered chan struct{} // when non-nil, signalled as a Write starts
}

func (f *fakeNet) Write(b []byte) (int, error) {
	if f.entered != nil {
		select {
		case f.entered <- struct{}{}:
		default:
		}
	}
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, net.ErrClosed
	}
	if f.failErr != nil {
		return 0, f.failErr
	}
	if f.zeroN {
		return 0, nil
	}
	n := len(b)
	if f.maxN > 0 && n > f.maxN {
		n = f.maxN
	}
	f.got.Write(b[:n])
	f.sizes = append(f.sizes, n)
	return n, nil
}

func (f *fakeNet) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeNet) SetWriteDeadline(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline = t
	return nil
}

func (f *fakeNet) snapshot() (string, []int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got.String(), append([]int(nil), f.sizes...), f.closed
}

func frames(n int) (each [][]byte, all string) {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		f := []byte{byte('a' + i%26), byte('0' + i%10), '|'}
		each = append(each, f)
		b.Write(f)
	}
	return each, b.String()
}

func mustWrite(t *testing.T, w *coalescingConn, b []byte) {
	t.Helper()
	if n, err := w.Write(b); err != nil || n != len(b) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(b))
	}
}

func TestCoalescedWritesShareSystemCalls(t *testing.T) {
	f := &fakeNet{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	before := ReadWriteStats()
	w := newCoalescingConn(f, 1024)
	each, all := frames(50)
	mustWrite(t, w, each[0])
	<-f.entered // the flusher is in the kernel with the first frame
	for _, b := range each[1:] {
		mustWrite(t, w, b)
	}
	close(f.hold)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, sizes, closed := f.snapshot()
	if got != all {
		t.Fatalf("peer got %q, want %q", got, all)
	}
	if len(sizes) != 2 {
		t.Fatalf("%d system calls (%v) for 50 writes, want 2: the first, then the 49 written meanwhile", len(sizes), sizes)
	}
	if st := ReadWriteStats(); st.Writes-before.Writes != 50 || st.SystemCalls-before.SystemCalls != 2 {
		t.Fatalf("WriteStats counted %d writes and %d system calls, want 50 and 2", st.Writes-before.Writes, st.SystemCalls-before.SystemCalls)
	}
	if !closed {
		t.Fatal("the wrapped connection was not closed")
	}
}

func TestCoalescedWritesStayBounded(t *testing.T) {
	f := &fakeNet{hold: make(chan struct{})}
	const limit = 64
	w := newCoalescingConn(f, limit)
	each, all := frames(200)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, b := range each {
			if _, err := w.Write(b); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	close(f.hold)
	<-done
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, sizes, _ := f.snapshot()
	if got != all {
		t.Fatalf("peer got %q, want %q", got, all)
	}
	for _, n := range sizes {
		if n > limit {
			t.Fatalf("a system call of %d bytes: more than the %d-byte bound was buffered", n, limit)
		}
	}
}

func TestCoalescedOversizedWriteIsNotSplitOrRefused(t *testing.T) {
	f := &fakeNet{}
	w := newCoalescingConn(f, 16)
	big := bytes.Repeat([]byte("x"), 100)
	mustWrite(t, w, big)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := f.snapshot(); got != string(big) {
		t.Fatalf("peer got %d bytes, want 100", len(got))
	}
}

func TestCoalescedPartialWritesAreCompleted(t *testing.T) {
	f := &fakeNet{maxN: 3}
	w := newCoalescingConn(f, 1024)
	each, all := frames(40)
	for _, b := range each {
		mustWrite(t, w, b)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := f.snapshot(); got != all {
		t.Fatalf("peer got %q, want %q", got, all)
	}
}

func TestCoalescedWriteErrorSurfacesAndClosesConn(t *testing.T) {
	for name, f := range map[string]*fakeNet{
		"error":       {failErr: errors.New("connection reset by peer")},
		"short write": {zeroN: true},
	} {
		t.Run(name, func(t *testing.T) {
			w := newCoalescingConn(f, 1024)
			mustWrite(t, w, []byte("frame")) // accepted: the failure comes later
			<-w.done                         // the flusher gave up
			_, err := w.Write([]byte("next"))
			want := f.failErr
			if want == nil {
				want = io.ErrShortWrite
			}
			if !errors.Is(err, want) {
				t.Fatalf("Write after the failure: %v, want %v", err, want)
			}
			if _, _, closed := f.snapshot(); !closed {
				t.Fatal("the wrapped connection was left open: go-amqp's reader would not notice")
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCoalescedCloseFlushesWhatIsBuffered(t *testing.T) {
	f := &fakeNet{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := newCoalescingConn(f, 1024)
	each, all := frames(10)
	mustWrite(t, w, each[0])
	<-f.entered
	for _, b := range each[1:] {
		mustWrite(t, w, b)
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	close(f.hold)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	got, _, isClosed := f.snapshot()
	if got != all || !isClosed {
		t.Fatalf("peer got %q (closed %v), want %q then closed", got, isClosed, all)
	}
	if f.deadline.IsZero() {
		t.Fatal("Close set no write deadline: a peer that reads nothing would hold it up")
	}
	if _, err := w.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
}

// A peer that reads nothing: Close still returns (the linger deadline
// ends the flusher's write) and a Write waiting for room is released.
func TestCoalescedCloseWithStuckPeer(t *testing.T) {
	a, b := net.Pipe() // synchronous: nothing is written until b reads
	defer func() { _ = b.Close() }()
	w := newCoalescingConn(a, 8)
	w.linger = 10 * time.Millisecond
	mustWrite(t, w, []byte("12345678"))
	blocked := make(chan error, 1)
	go func() {
		// The flusher holds at most one of these: the last waits for
		// room, and none comes.
		for _, b := range []string{"abcdefgh", "ijklmnop"} {
			if _, err := w.Write([]byte(b)); err != nil {
				blocked <- err
				return
			}
		}
		blocked <- nil
	}()
	_ = w.Close() // returns: that is the test (its error is the pipe's)
	if err := <-blocked; err == nil {
		t.Fatal("a Write waiting for room returned nil after Close")
	}
}

func TestCoalescedConcurrentWriteAndClose(t *testing.T) {
	for round := 0; round < 20; round++ {
		a, b := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, b) }()
		w := newCoalescingConn(a, 32)
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					if _, err := w.Write([]byte("0123456789")); err != nil {
						if !errors.Is(err, net.ErrClosed) {
							t.Errorf("Write: %v", err)
						}
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Close()
		}()
		wg.Wait()
		_ = w.Close() // idempotent
		_ = b.Close()
	}
}
