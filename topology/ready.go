package topology

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Ready is what one call into the Node produced, for the driver to act on:
// send the floods, install the table, log the events. Like raft's Ready, it
// is the only way the core talks to the world.
type Ready struct {
	Flood        []Outgoing
	TableChanged bool
	Table        *Paths // the new table when TableChanged, else nil
	Events       []Event
	// Named are the brokers named for the first time since the node
	// started, by our own state or an accepted LSA (noteNamed): the
	// driver keeps them, so that a route towards a broker no one ever
	// advertised can be told from one towards a broker out of reach.
	Named []string
}

// Empty reports whether there is nothing to do.
func (r Ready) Empty() bool {
	return len(r.Flood) == 0 && !r.TableChanged && len(r.Events) == 0 && len(r.Named) == 0
}

// Outgoing is one LSA to send on some of the router's brokers: to every
// peer router attached there (a multicast publish, or one message per peer
// inbox on queue-only brokers; see docs/routing-protocol.md).
type Outgoing struct {
	LSA  LSA
	Data []byte   // the signed wire form; for a re-flood, the bytes as received
	To   []string // local broker names, sorted
}

// EventKind says what happened; the core does no logging, so everything a
// log line or metric needs comes out as an Event.
type EventKind int

const (
	EventStale           EventKind = iota + 1 // an LSA older than the one held: dropped
	EventDuplicate                            // the LSA already held (or our own echo): dropped
	EventVersionUnknown                       // a protocol version we do not speak: dropped; reported once per version
	EventRejected                             // failed to decode or validate (Err says why): dropped
	EventExpired                              // an originator's LSA reached MaxAge: its links are gone
	EventRestart                              // a router came back with a new instance
	EventDuplicateID                          // two live routers seem to share one router id
	EventOriginateFailed                      // our own LSA could not be encoded (too large)
	EventTooOld                               // older than MaxAge plus the skew allowance by its own signed time: dropped
	EventFuture                               // dated later than now plus the skew allowance: dropped
	EventReplayed                             // from a router no longer held, not newer than its last LSA seen: dropped
)

var kindNames = map[EventKind]string{
	EventStale: "stale", EventDuplicate: "duplicate", EventVersionUnknown: "version-unknown",
	EventRejected: "rejected", EventExpired: "expired", EventRestart: "restart",
	EventDuplicateID: "duplicate-id", EventOriginateFailed: "originate-failed",
	EventTooOld: "too-old", EventFuture: "future", EventReplayed: "replayed",
}

func (k EventKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one thing worth telling an operator. Fields that do not apply
// are zero.
type Event struct {
	Kind     EventKind
	Router   string // the originator concerned
	Instance int64
	Seq      uint64
	From     string // the broker the LSA arrived on
	Version  int    // EventVersionUnknown
	Prev     int64  // EventRestart, EventDuplicateID: the other instance
	Err      error  // EventRejected, EventOriginateFailed
	Time     int64  // EventTooOld, EventFuture: the LSA's signed time (Unix ns)
}

func (e Event) String() string {
	var b strings.Builder
	b.WriteString(e.Kind.String())
	if e.Router != "" {
		fmt.Fprintf(&b, " %s/%d#%d", e.Router, e.Instance, e.Seq)
	}
	if e.Prev != 0 {
		fmt.Fprintf(&b, " other-instance=%d", e.Prev)
	}
	if e.Version != 0 {
		fmt.Fprintf(&b, " v=%d", e.Version)
	}
	if e.Time != 0 {
		fmt.Fprintf(&b, " signed=%s", time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano))
	}
	if e.From != "" {
		fmt.Fprintf(&b, " from=%s", e.From)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Counters count what the node did, by reason; the driver exports them as
// metrics.
type Counters struct {
	Accepted     uint64 `json:"accepted"`      // LSAs stored (new or newer)
	Stale        uint64 `json:"stale"`         // dropped: older than held
	Duplicate    uint64 `json:"duplicate"`     // dropped: already held
	Version      uint64 `json:"version"`       // dropped: unknown protocol version
	Malformed    uint64 `json:"malformed"`     // dropped: bad JSON or invalid content
	TooLarge     uint64 `json:"too_large"`     // dropped: over MaxLSASize
	Unsigned     uint64 `json:"unsigned"`      // dropped: no MAC
	BadSignature uint64 `json:"bad_signature"` // dropped: MAC does not match
	TooOld       uint64 `json:"too_old"`       // dropped: older than MaxAge (+ skew) by its signed time
	Future       uint64 `json:"future"`        // dropped: signed later than now + skew
	Replayed     uint64 `json:"replayed"`      // dropped: of an expired router, not newer than its last seen
	Expired      uint64 `json:"expired"`       // originators aged out
	Restarts     uint64 `json:"restarts"`      // new instances seen
	DuplicateID  uint64 `json:"duplicate_id"`  // duplicate router id suspicions
	Originated   uint64 `json:"originated"`    // our own LSAs sent
	Reflooded    uint64 `json:"reflooded"`     // received LSAs passed on
	Synced       uint64 `json:"synced"`        // database syncs sent to a broker
	Recomputed   uint64 `json:"recomputed"`    // shortest-path recomputes
	NamedDropped uint64 `json:"named_dropped"` // broker names past MaxNamed, not remembered as named
}

// The reasons Decode refuses an LSA, by their counter's JSON name.
const (
	ReasonTooLarge     = "too_large"
	ReasonMalformed    = "malformed"
	ReasonUnsigned     = "unsigned"
	ReasonBadSignature = "bad_signature"
	ReasonVersion      = "version"
	ReasonNoSecret     = "no_secret"
)

// Reason names why Decode refused an LSA (one of the Reason constants), so
// that a transport that checks before queueing counts as the node does.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return ReasonTooLarge
	case errors.Is(err, ErrUnsigned):
		return ReasonUnsigned
	case errors.Is(err, ErrBadSignature):
		return ReasonBadSignature
	case errors.Is(err, ErrVersion):
		return ReasonVersion
	case errors.Is(err, ErrNoSecret):
		return ReasonNoSecret
	}
	return ReasonMalformed
}

// Add adds n refusals for a reason (Reason's names) to the counter of that
// reason; other names are ignored. The driver folds in what its transport
// refused before the node saw it, so one counter tells them all.
func (c *Counters) Add(reason string, n uint64) {
	switch reason {
	case ReasonTooLarge:
		c.TooLarge += n
	case ReasonUnsigned:
		c.Unsigned += n
	case ReasonBadSignature:
		c.BadSignature += n
	case ReasonVersion:
		c.Version += n
	case ReasonMalformed:
		c.Malformed += n
	}
}

// count bumps the counter of a decode error's reason.
func (c *Counters) count(err error) { c.Add(Reason(err), 1) }
