package topology

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config tunes a Node. DefaultConfig documents the defaults; New fills any
// zero duration or jitter with them.
type Config struct {
	RouterID string // required: the configuration's router_id
	// Instance tells this run of the router from earlier ones: its start
	// time in Unix nanoseconds. A restart must give a larger value, so that
	// peers take the new LSAs over the old ones whatever the sequence.
	Instance int64
	Secret   []byte // required: the network's shared HMAC-SHA256 key

	Refresh      time.Duration // re-originate at least this often (less jitter)
	MaxAge       time.Duration // forget an originator not heard from for this long
	MinOriginate time.Duration // at most one origination, and one database sync per broker, per interval
	Jitter       float64       // at most this fraction of Refresh is taken off each refresh, at random
	// SPFDelay holds a recompute back for this long after the graph first
	// changes, so that a burst of LSAs costs one new table. A table costs
	// a few ms at 1,000 brokers (its trees are computed per source, when
	// asked), so 0, the default — recompute at once — suits most networks.
	SPFDelay time.Duration
	// MaxSkew is how far the originator's clock may be from ours: an LSA
	// is refused when its signed time is more than MaxAge + MaxSkew ago, or
	// more than MaxSkew ahead. 0: DefaultMaxSkew.
	MaxSkew time.Duration
	// MaxRemembered bounds the routers remembered after their LSA expired
	// (their last instance and seq), against replays of it; beyond, the one
	// with the oldest signed time is forgotten. 0: DefaultMaxRemembered.
	MaxRemembered int
	// Rand returns values in [0, 1) for the jitter, so that routers started
	// together do not refresh together. nil means no jitter (tests); drivers
	// pass math/rand/v2's Float64.
	Rand func() float64
}

// Defaults of the replay protection. Servers kept by NTP agree within
// milliseconds; 30 s covers a clock that is badly off without making the
// replay window (MaxAge + MaxSkew) much longer. 4,096 remembered routers
// cost about 0.5 MB at most.
const (
	DefaultMaxSkew       = 30 * time.Second
	DefaultMaxRemembered = 4096
)

// DefaultConfig returns the defaults: refresh every 30 s less up to 25 %,
// forget an originator after 90 s (three refreshes missed), originate at
// most once a second, allow 30 s of clock skew, remember 4,096 expired
// routers.
func DefaultConfig() Config {
	return Config{Refresh: 30 * time.Second, MaxAge: 90 * time.Second, MinOriginate: time.Second, Jitter: 0.25,
		MaxSkew: DefaultMaxSkew, MaxRemembered: DefaultMaxRemembered}
}

// ErrConfig is wrapped by every configuration problem New reports.
var ErrConfig = errors.New("topology: bad config")

func (c *Config) fill() {
	d := DefaultConfig()
	if c.Refresh == 0 {
		c.Refresh = d.Refresh
	}
	if c.MaxAge == 0 {
		c.MaxAge = d.MaxAge
	}
	if c.MinOriginate == 0 {
		c.MinOriginate = d.MinOriginate
	}
	if c.Jitter == 0 {
		c.Jitter = d.Jitter
	}
	if c.MaxSkew == 0 {
		c.MaxSkew = d.MaxSkew
	}
	if c.MaxRemembered == 0 {
		c.MaxRemembered = d.MaxRemembered
	}
}

// validate reports every problem at once.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...)))
	}
	if err := checkName("router id", c.RouterID, MaxNameLen); err != nil {
		bad("%v", err)
	}
	if c.Instance <= 0 {
		bad("instance %d must be > 0", c.Instance)
	}
	if len(c.Secret) == 0 {
		bad("no network secret")
	}
	if c.MinOriginate < 0 || c.MinOriginate > c.Refresh {
		bad("need 0 < min originate (%s) <= refresh (%s)", c.MinOriginate, c.Refresh)
	}
	if c.Refresh <= 0 || c.MaxAge <= c.Refresh {
		bad("need 0 < refresh (%s) < max age (%s)", c.Refresh, c.MaxAge)
	}
	if c.SPFDelay < 0 || c.SPFDelay >= c.MaxAge {
		bad("spf delay %s not in [0, max age)", c.SPFDelay)
	}
	if c.Jitter < 0 || c.Jitter >= 1 {
		bad("jitter %g not in [0, 1)", c.Jitter)
	}
	if c.MaxSkew < 0 || c.MaxRemembered < 0 {
		bad("max skew %s and max remembered %d must not be negative", c.MaxSkew, c.MaxRemembered)
	}
	return errors.Join(errs...)
}

// Node is one router's link-state database and shortest-path table. It is a
// pure state machine: the driver feeds it local changes, received LSAs and
// clock ticks, and acts on the Ready each call returns. Not safe for
// concurrent use: the driver owns it from one goroutine.
type Node struct {
	cfg Config

	// Local state and our own origination.
	brokers     []BrokerState              // attached brokers, sorted by name
	links       []Link                     // held links, sorted
	ext         map[string]json.RawMessage // our extensions (demand, ...), advertised with the rest
	started     bool                       // SetLocal was called: we have something to advertise
	dirty       bool                       // local state changed since the last origination
	seq         uint64                     // of our last origination
	own         LSA                        // our last originated LSA (Seq 0 before the first)
	ownData     []byte
	lastOrig    time.Time
	nextRefresh time.Time

	// What the others advertise.
	db       map[string]*entry       // router id → its newest LSA
	prev     map[string]prevInstance // router id → the instance it replaced (duplicate-id detection)
	gone     map[string]remembered   // router id → its last LSA, once expired: replays of it are refused (replay.go)
	forgetAt time.Time               // when the first of gone leaves the window (zero: gone is empty)
	versions map[int]bool            // unknown versions already reported
	syncDue  map[string]time.Time    // broker → when a pending database sync may go
	lastSync map[string]time.Time    // broker → when the last sync went

	// The table.
	graphDirty bool      // an LSA or local link changed since the last recompute
	spfDue     time.Time // with SPFDelay: when the held-back recompute runs
	edges      []Edge
	paths      *Paths
	lastGraph  []Edge            // what graph last returned (patchGraph starts from it)
	lastShares map[string][]Edge // router id ("" ourselves) → its share of lastGraph

	counters Counters
	// named are the brokers ever named since New (noteNamed), at most
	// MaxNamed.
	named map[string]struct{}
}

// entry is a held LSA. Age counts from our own receipt, so clocks need not
// agree across routers; but an LSA is never held past its own signed time
// plus MaxAge and MaxSkew either (deadline), so one that arrives late,
// e.g. in a database sync, does not live a whole MaxAge more.
type entry struct {
	lsa  LSA
	data []byte
	at   time.Time
	from string

	edges     []Edge // the LSA's share of the graph, sorted (graphEdges)
	edgesDone bool   // edges is worked out (an LSA without links has none)
}

// prevInstance is the last seen LSA of an instance that was superseded: if
// it still advances, two routers share one id.
type prevInstance struct {
	instance int64
	seq      uint64
	at       time.Time
}

// maxVersionsReported bounds the memory spent on remembering reported
// versions (each report needs a valid MAC, but stay bounded anyway).
const maxVersionsReported = 16

// New returns a node with an empty database; it advertises nothing until
// the first SetLocal.
func New(cfg Config) (*Node, error) {
	cfg.fill()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	empty, _ := Compute(nil)
	return &Node{
		cfg:      cfg,
		db:       map[string]*entry{},
		prev:     map[string]prevInstance{},
		gone:     map[string]remembered{},
		versions: map[int]bool{},
		syncDue:  map[string]time.Time{},
		lastSync: map[string]time.Time{},
		paths:    empty,
	}, nil
}

// SetLocal replaces the router's attachments and links. A change is
// originated at once, or, within MinOriginate of the last origination, as
// soon as that interval is over. A broker that has just become Operational
// also gets our whole database, so routers there catch up without waiting
// for refreshes.
func (n *Node) SetLocal(brokers []BrokerState, links []Link, now time.Time) (Ready, error) {
	if err := checkLocal(brokers, links); err != nil {
		return Ready{}, fmt.Errorf("topology: local state: %w", err)
	}
	bs := slices.Clone(brokers)
	slices.SortFunc(bs, func(a, b BrokerState) int { return strings.Compare(a.Name, b.Name) })
	ls := slices.Clone(links)
	slices.SortFunc(ls, compareLinks)
	var r Ready
	if n.started && slices.Equal(bs, n.brokers) && slices.Equal(ls, n.links) {
		return r, nil
	}
	for _, b := range bs {
		// With nothing held, the origination below is all there is to send.
		if b.Operational() && !n.localUp(b.Name) && len(n.db) > 0 {
			n.requestSync(b.Name, now)
		}
	}
	n.brokers, n.links = bs, ls
	n.noteNamed(bs, ls, &r)
	n.started, n.dirty, n.graphDirty = true, true, true
	n.step(now, &r)
	return r, nil
}

// SetExt sets (or, with a nil value, removes) one extension of our own
// advertisement — what later features add to the link state, such as the
// demand at our brokers. A change is advertised like a local change.
func (n *Node) SetExt(key string, value json.RawMessage, now time.Time) Ready {
	var r Ready
	old, had := n.ext[key]
	if (value == nil && !had) || (had && bytes.Equal(old, value)) {
		return r
	}
	if n.ext == nil {
		n.ext = map[string]json.RawMessage{}
	}
	if value == nil {
		delete(n.ext, key)
		if len(n.ext) == 0 {
			n.ext = nil // advertised without the field
		}
	} else {
		n.ext[key] = slices.Clone(value)
	}
	n.dirty = true
	if n.started {
		n.step(now, &r)
	}
	return r
}

// Receive decodes, verifies and applies an LSA that arrived on a broker.
// Whatever is rejected is counted and reported as an Event.
func (n *Node) Receive(data []byte, from string, now time.Time) Ready {
	var r Ready
	l, err := Decode(data, n.cfg.Secret)
	var ve *VersionError
	switch {
	case err == nil:
		n.apply(l, data, from, now, &r)
	case errors.As(err, &ve):
		n.unknownVersion(ve.Version, from, &r)
	default:
		n.counters.count(err)
		r.event(Event{Kind: EventRejected, From: from, Err: err})
	}
	n.step(now, &r)
	return r
}

// Apply takes an LSA already decoded and verified (by Decode) that arrived
// on broker from ("" if it came from elsewhere).
func (n *Node) Apply(l LSA, from string, now time.Time) Ready {
	var r Ready
	n.apply(l, nil, from, now, &r)
	n.step(now, &r)
	return r
}

// Tick moves time forward: expiries, refreshes, delayed originations and
// syncs. Call it at NextTick (calling it more often is harmless).
func (n *Node) Tick(now time.Time) Ready {
	var r Ready
	n.step(now, &r)
	return r
}

// NextTick returns when the node next has something to do; never later
// than one Refresh from now.
func (n *Node) NextTick(now time.Time) time.Time {
	next := now.Add(n.cfg.Refresh)
	earlier := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}
	if n.started {
		earlier(n.nextRefresh)
	}
	if n.dirty {
		earlier(n.lastOrig.Add(n.cfg.MinOriginate))
	}
	for _, e := range n.db {
		earlier(n.deadline(e))
	}
	for _, t := range n.syncDue {
		earlier(t)
	}
	if n.graphDirty && !n.spfDue.IsZero() {
		earlier(n.spfDue)
	}
	return next
}

// step does whatever is due at now, in an order that lets one Ready carry
// it all: expire first (a sync must not send dead LSAs), then originate
// (a sync should carry the new one), then sync, then recompute once.
func (n *Node) step(now time.Time, r *Ready) {
	n.expire(now, r)
	if n.originationDue(now) {
		n.originate(now, r)
	}
	n.sync(now, r)
	n.recompute(now, r)
}

// Paths returns the current shortest-path table (never nil).
func (n *Node) Paths() *Paths { return n.paths }

// Ext returns one extension as the other routers advertise it: router id
// → value, for every router the database holds now. A router that
// advertises without the extension is in the map with a nil value, so a
// caller can tell "advertises none" from "not known (any more)".
func (n *Node) Ext(key string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(n.db))
	for id, e := range n.db {
		out[id] = e.lsa.Ext[key]
	}
	return out
}

// Counters returns the counters so far.
func (n *Node) Counters() Counters { return n.counters }

// Peers returns the routers whose fresh LSA says they are attached to the
// broker, sorted: on a queue-only broker, the inboxes to send a flood to.
func (n *Node) Peers(broker string) []string {
	var out []string
	for id, e := range n.db {
		if e.lsa.attached(broker) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func compareLinks(a, b Link) int {
	return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To),
		cmp.Compare(a.Cost, b.Cost), boolCmp(a.Up, b.Up))
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
