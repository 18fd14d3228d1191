package group

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Stop cancels the goroutines' context and returns only once all of them
// have returned.
func TestStopCancelsAndWaits(t *testing.T) {
	g := New(t.Context())
	var ended atomic.Int32
	for range 3 {
		if !g.Go(func(ctx context.Context) {
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond) // returning takes a while
			ended.Add(1)
		}) {
			t.Fatal("Go refused before Stop")
		}
	}
	g.Stop()
	if n := ended.Load(); n != 3 {
		t.Fatalf("Stop returned with %d of 3 goroutines ended", n)
	}
	if g.Context().Err() == nil {
		t.Fatal("the group's context is live after Stop")
	}
	g.Stop() // idempotent
}

// After Stop, Go starts nothing and says so.
func TestGoAfterStopRefuses(t *testing.T) {
	g := New(t.Context())
	g.Stop()
	ran := make(chan struct{}, 1)
	if g.Go(func(context.Context) { ran <- struct{}{} }) {
		t.Fatal("Go after Stop reported a start")
	}
	select {
	case <-ran:
		t.Fatal("Go after Stop ran fn")
	case <-time.After(20 * time.Millisecond):
	}
}

// The parent's end reaches the goroutines; Stop still waits for them.
func TestParentCancelEndsGoroutines(t *testing.T) {
	parent, cancel := context.WithCancel(t.Context())
	g := New(parent)
	done := make(chan struct{})
	g.Go(func(ctx context.Context) {
		<-ctx.Done()
		close(done)
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's cancel did not reach the goroutine")
	}
	g.Stop()
}

// A goroutine of the group may start another while the group runs; one
// started during Stop is refused rather than left unwaited.
func TestGoFromInsideAndConcurrentStop(t *testing.T) {
	g := New(t.Context())
	var started, refused atomic.Int32
	for range 50 {
		g.Go(func(ctx context.Context) {
			<-ctx.Done()
			if g.Go(func(context.Context) { started.Add(1) }) {
				return
			}
			refused.Add(1)
		})
	}
	stops := make(chan struct{})
	for range 2 { // concurrent Stops both wait
		go func() { g.Stop(); stops <- struct{}{} }()
	}
	<-stops
	<-stops
	if refused.Load() != 50 || started.Load() != 0 {
		t.Fatalf("after Stop: %d refused, %d started; want 50 and 0", refused.Load(), started.Load())
	}
}
