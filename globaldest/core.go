// Package globaldest makes destinations global across a federation, as
// seed 000 (Open MQ's cluster propagation) asks: a destination named by a
// `destinations:` entry exists at every broker of the entry's span with
// the same properties; created at one broker by an administrator, it is
// created at the others; deleted at one, it is deleted everywhere after a
// confirmation period (never one that holds messages unless the entry says
// so); auto-created and temporary destinations follow seed 000's rules.
//
// Core is the decision, pure like topology/ and cluster/: broker listings
// and the time go in, actions (create, delete, report) come out. The
// router lists the brokers, carries the actions out and says which failed
// (router/globaldest.go). Golden scripts: testdata/*.txt.
package globaldest

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/fedrouter/fedrouter/internal/glob"
)

// Kind is how a destination came to exist (seed 000).
type Kind int

const (
	// Configured: created by an administrator (RabbitMQ: a durable queue).
	Configured Kind = iota
	// AutoCreated: created on first use by a producer or a consumer
	// (RabbitMQ: a non-durable queue).
	AutoCreated
	// Temporary: lives with its creator's connection (RabbitMQ: exclusive
	// or auto-delete).
	Temporary
)

func (k Kind) String() string { return [...]string{"configured", "auto-created", "temporary"}[k] }

// Entry is one `destinations:` entry of the configuration.
type Entry struct {
	Pattern string   // a glob over queue names ('*', '?')
	Brokers []string // the span: the brokers the destination exists at
	// Props, when set, are the destination's properties: an instance that
	// differs is a conflict (reported, never overwritten). Nil: the
	// properties of the first instance seen, and a change made at one
	// broker propagates.
	Props *Props
	// DeleteNonEmpty: a deletion confirmed at one broker deletes instances
	// that hold messages too (default: they are kept, reported orphaned).
	DeleteNonEmpty bool
	// ConfirmDelete is how long a destination must stay gone from a broker
	// before its deletion is carried to the others: longer than a broker
	// restart.
	ConfirmDelete time.Duration
	// Idle: an auto-created destination with no consumer and no message
	// anywhere this long is removed everywhere.
	Idle time.Duration
	// Follow: messages at an instance with no consumer move to one with
	// consumers (flows.go). MaxHops bounds how often one message moves;
	// Settle is the hysteresis: an instance must have had no consumer, and
	// the target consumers, this long before a flow starts.
	Follow  bool
	MaxHops int
	Settle  time.Duration
	// Limits, when set, hold for the sum over the instances (shares.go).
	Limits *Limits
}

// Queue is one destination as a broker's listing shows it.
type Queue struct {
	Name     string
	Kind     Kind
	Props    Props // normalized
	Messages int
	// Consumers: as listed, less this router's own flow receivers (the
	// core subtracts other routers', others.go).
	Consumers int
	Bytes     int64 // the bodies' bytes it holds
}

// ActionKind says what an Action asks.
type ActionKind int

const (
	// Create: declare Name at Broker with Props.
	Create ActionKind = iota
	// Delete: delete Name at Broker; IfEmpty: only if it holds no message,
	// IfUnused: only if no consumer has it (the broker checks, so a message
	// or a consumer that arrives meanwhile keeps it).
	Delete
	// Report: tell the operator Msg (a conflict, an orphan, a deletion
	// being confirmed or cancelled).
	Report
	// Move: move Name's messages from Broker to To, each at most MaxHops
	// times in its life (flows.go), until a Stop for the same pair.
	Move
	// Stop: stop moving Name's messages from Broker to To.
	Stop
)

// Action is one thing for the router to do.
type Action struct {
	Kind     ActionKind
	Broker   string
	Name     string
	Props    Props
	IfEmpty  bool
	IfUnused bool
	To       string // Move, Stop: the target broker
	MaxHops  int    // Move
	Msg      string // why (Create, Delete, Move, Stop); what (Report)
}

func (a Action) String() string {
	switch a.Kind {
	case Create:
		return fmt.Sprintf("create %s at %s (%s): %s", a.Name, a.Broker, a.Props, a.Msg)
	case Delete:
		cond := ""
		if a.IfEmpty {
			cond = " if empty"
		}
		if a.IfUnused {
			cond += " if unused"
		}
		return fmt.Sprintf("delete %s at %s%s: %s", a.Name, a.Broker, cond, a.Msg)
	case Move:
		return fmt.Sprintf("move %s from %s to %s (max_hops %d): %s", a.Name, a.Broker, a.To, a.MaxHops, a.Msg)
	case Stop:
		return fmt.Sprintf("stop moving %s from %s to %s: %s", a.Name, a.Broker, a.To, a.Msg)
	}
	return fmt.Sprintf("report %s: %s", a.Name, a.Msg)
}

// Core holds what the router knows of the global destinations. Not safe
// for concurrent use: one goroutine owns it.
type Core struct {
	entries []Entry
	brokers map[string]*brokerState
	dests   map[string]*dest
	others  Others // what the other routers advertise (others.go)
}

type brokerState struct {
	okAt, failedAt time.Time // the last listing that answered, that failed
}

// up says whether the broker's last listing answered.
func (b *brokerState) up() bool { return b != nil && !b.okAt.IsZero() && !b.okAt.Before(b.failedAt) }

// dest is one global destination.
type dest struct {
	name      string
	entry     int
	kind      Kind
	props     Props // the canonical properties
	origin    string
	inst      map[string]*inst // by broker: instances seen
	deleting  *deletion        // a deletion at one broker being confirmed
	deleted   bool             // confirmed: kept while orphans remain
	reaped    bool             // deleted for being idle (auto-created)
	idleSince time.Time        // auto-created: no consumer, no message anywhere since
	reported  map[string]string
	flows     map[string]*flow // by source broker: where its messages move (flows.go)
	remote    map[string]*inst // by broker: consumers other routers advertise (remote.go)
}

type inst struct {
	present             bool
	props               Props
	messages, consumers int
	listed              int // consumers as listed, before other routers' flows (others.go)
	bytes               int64
	pending             bool // a Create was asked, not seen yet
	expectGone          bool // a Delete was asked: its going is not a deletion
	// busySince: consumers listed at every listing since; freeSince: none
	// at every listing since (the flows' hysteresis).
	busySince, freeSince time.Time
	arrived              bool // the consumers were seen arriving (flows.go)
}

type deletion struct {
	at    string
	since time.Time
}

// New returns a core for entries (each with its span, confirmation and
// idle periods set: config fills the defaults).
func New(entries []Entry) *Core {
	return &Core{entries: entries, brokers: map[string]*brokerState{}, dests: map[string]*dest{}}
}

// entryOf is the first entry whose pattern matches name and whose span
// holds broker; -1 if none.
func (c *Core) entryOf(name, broker string) int {
	for i, e := range c.entries {
		if glob.Match(e.Pattern, name) && slices.Contains(e.Brokers, broker) {
			return i
		}
	}
	return -1
}

// Failed: listing broker failed at now. Nothing is concluded from a
// broker that cannot be listed; a destination missing right after such a
// failure was lost in a restart, not deleted.
func (c *Core) Failed(broker string, now time.Time) {
	c.broker(broker).failedAt = now
}

func (c *Core) broker(name string) *brokerState {
	b := c.brokers[name]
	if b == nil {
		b = &brokerState{}
		c.brokers[name] = b
	}
	return b
}

// Observe: broker's whole listing at now. It returns what to do.
func (c *Core) Observe(broker string, queues []Queue, now time.Time) []Action {
	var out []Action
	bs := c.broker(broker)
	restarted := !bs.failedAt.IsZero()
	wasUp := bs.up() // else consumers may have come and gone unseen
	listed := map[string]bool{}
	for _, q := range queues {
		e := c.entryOf(q.Name, broker)
		if e < 0 {
			continue
		}
		listed[q.Name] = true
		out = append(out, c.seen(broker, e, q, wasUp, now)...)
	}
	for _, name := range c.sortedNames() {
		d := c.dests[name]
		if in := d.inst[broker]; in != nil && in.present && !listed[name] {
			out = append(out, c.gone(d, broker, restarted && now.Sub(bs.failedAt) < c.entries[d.entry].ConfirmDelete, now)...)
		} else if in != nil && !in.present && !listed[name] {
			in.pending, in.expectGone = false, false // asked and not there: ask again
		}
	}
	bs.okAt = now
	return append(out, c.Tick(now)...)
}

// seen records q at broker.
func (c *Core) seen(broker string, e int, q Queue, wasUp bool, now time.Time) []Action {
	d := c.dests[q.Name]
	if d == nil {
		d = &dest{name: q.Name, entry: e, kind: q.Kind, props: q.Props, origin: broker, inst: map[string]*inst{}, reported: map[string]string{}, flows: map[string]*flow{}, remote: map[string]*inst{}}
		if p := c.entries[e].Props; p != nil {
			d.props = *p
		}
		c.dests[q.Name] = d
	}
	var out []Action
	in := d.inst[broker]
	if in == nil {
		in = &inst{}
		d.inst[broker] = in
	}
	was, wasProps := in.present, in.props
	if d.deleted && !was && !in.pending {
		// Declared anew (not a copy the routers asked for): a new life.
		d.deleted, d.reaped, d.origin, d.kind, d.idleSince = false, false, broker, q.Kind, time.Time{}
		if c.entries[e].Props == nil {
			d.props = q.Props
		}
		clear(d.reported)
		out = append(out, Action{Kind: Report, Name: d.name, Msg: fmt.Sprintf("declared again at %s after its deletion", broker)})
	}
	back := d.deleting != nil && d.deleting.at == broker
	if back {
		d.deleting = nil
		out = append(out, Action{Kind: Report, Name: d.name, Msg: fmt.Sprintf("deletion at %s not confirmed: it is back", broker)})
	}
	// Declared again at broker with other properties (RabbitMQ's arguments
	// cannot change in place: deleted and declared again): a change,
	// carried to the rest. One first seen with other properties is a
	// conflict instead (reconcile reports it).
	if c.entries[e].Props == nil && !d.deleted && !q.Props.Equal(d.props) && (back || (was && wasProps.Equal(d.props))) {
		out = append(out, Action{Kind: Report, Name: d.name, Msg: fmt.Sprintf("properties changed at %s: %s (were %s); carried to the other brokers", broker, q.Props, d.props)})
		d.props = q.Props
		clear(d.reported)
	}
	consumers := c.consumersOf(broker, q.Name, q.Consumers)
	in.consumersSeen(was && wasUp, consumers, now)
	in.present, in.props, in.messages, in.consumers, in.pending, in.expectGone = true, q.Props, q.Messages, consumers, false, false
	in.listed = q.Consumers
	in.bytes = q.Bytes
	return out
}

// gone: d's instance at broker is no longer listed.
func (c *Core) gone(d *dest, broker string, afterRestart bool, now time.Time) []Action {
	in := d.inst[broker]
	in.present = false
	switch {
	case in.expectGone || d.deleted:
		in.expectGone = false
		return nil
	case afterRestart:
		return []Action{{Kind: Report, Name: d.name, Msg: fmt.Sprintf("gone from %s after it could not be listed (a restart): not a deletion; created again", broker)}}
	case d.kind == Temporary:
		// Its consumer's connection closed: deleted with it, at once.
		d.deleting = &deletion{at: broker, since: now.Add(-c.entries[d.entry].ConfirmDelete)}
		return nil
	case d.deleting == nil:
		d.deleting = &deletion{at: broker, since: now}
		return []Action{{Kind: Report, Name: d.name, Msg: fmt.Sprintf("deleted at %s: deleting it everywhere unless it is back within %s", broker, c.entries[d.entry].ConfirmDelete)}}
	}
	return nil
}

// Result: the router carried a out; err is nil when the broker did it.
// A created queue is known present from then on — an administrator who
// deletes it before the next listing deletes the destination, not a
// create that got lost — and a create or delete that failed is asked
// again after the next listing.
func (c *Core) Result(a Action, err error) {
	d := c.dests[a.Name]
	if d != nil && a.Kind == Move {
		d.moveResult(a, err)
		return
	}
	if d == nil || (a.Kind != Create && a.Kind != Delete) {
		return
	}
	in := d.inst[a.Broker]
	if in == nil {
		return
	}
	switch {
	case a.Kind == Create && err == nil:
		in.busySince, in.freeSince = time.Time{}, time.Time{} // known from the next listing
		in.present, in.props, in.messages, in.consumers, in.pending, in.bytes = true, a.Props, 0, 0, false, 0
		in.listed = 0
	case a.Kind == Create:
		// Still pending: the next listing of the broker, not showing it,
		// clears that, and the create is asked again.
	case err != nil: // a delete refused (the queue holds messages) or failed
		in.expectGone = false
	}
}

// Tick: the time is now. It returns what to do.
func (c *Core) Tick(now time.Time) []Action {
	var out []Action
	for _, name := range c.sortedNames() {
		d := c.dests[name]
		out = append(out, c.reconcile(d, now)...)
		out = append(out, c.follow(d, now)...)
		d.forgetRemote()
		if len(d.present()) == 0 && len(d.flows) == 0 && !d.anyPending() && d.deleting == nil && (d.deleted || !c.propagates(d)) {
			delete(c.dests, name)
		}
	}
	return out
}

func (c *Core) sortedNames() []string {
	names := make([]string, 0, len(c.dests))
	for n := range c.dests {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// present is the brokers holding an instance, sorted.
func (d *dest) present() []string {
	var out []string
	for b, in := range d.inst {
		if in.present {
			out = append(out, b)
		}
	}
	sort.Strings(out)
	return out
}

func (d *dest) anyPending() bool {
	for _, in := range d.inst {
		if in.pending {
			return true
		}
	}
	return false
}

// report returns a Report for msg under key, once until its text changes.
func (d *dest) report(key, msg string) []Action {
	if d.reported[key] == msg {
		return nil
	}
	d.reported[key] = msg
	return []Action{{Kind: Report, Name: d.name, Msg: msg}}
}
