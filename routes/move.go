package routes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// A global destination's flow (OriginDestination, Spec.MaxMoves) is a
// queue route from the destination's instance at one broker into its
// instance at another (Spec.DestQueue). Its dispatch (links.EngineMove) counts
// each message's moves and parks a message that has moved MaxMoves times
// back at the tail of the source queue; once a run meets a message it
// parked itself, it has seen all there is and rests, longer each time it
// found nothing to move, so that messages left at their limit are not
// cycled through the queue without pause.

// errLapped ends a flow's run that has nothing left to move.
var errLapped = errors.New("every message at the source has moved max_moves times")

// Rest after a lap: moveRest, doubled after each lap that moved nothing,
// up to maxMoveRest.
const (
	moveRest    = 5 * time.Second
	maxMoveRest = time.Minute
)

// moveCounts are a flow's counts since it started.
type moveCounts struct {
	moved, parked atomic.Uint64
	lastMoved     uint64        // moved at the end of the last rest (run goroutine only)
	restFor       time.Duration // the next rest (run goroutine only)
}

// runStamp is a flow run's stamp on what it parks: random, so a run
// knows its own.
func runStamp() string {
	var stamp [8]byte
	_, _ = rand.Read(stamp[:]) // never fails (crypto/rand)
	return hex.EncodeToString(stamp[:])
}

// rest waits after a lap; false if ctx ended or the route was halted
// first (a flow stopped while resting has nothing in flight).
func (r *route) rest(ctx context.Context) bool {
	mc := &r.moves
	moved := mc.moved.Load()
	switch {
	case mc.restFor == 0 || moved != mc.lastMoved:
		mc.restFor = moveRest
	default:
		mc.restFor = min(2*mc.restFor, maxMoveRest)
	}
	mc.lastMoved = moved
	r.state.setDetail(fmt.Sprintf("resting %s: the messages left at %s have moved %d times (max_moves: the destination's max_hops); they stay for a consumer there", mc.restFor, r.spec.Src, r.spec.MaxMoves))
	if waitFor(ctx, mc.restFor, []<-chan struct{}{r.halt}) {
		select {
		case <-r.halt:
			return false
		default:
		}
		return true
	}
	return false
}
