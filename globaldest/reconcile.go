package globaldest

import (
	"fmt"
	"time"
)

// propagates says whether d is carried to the other brokers (seed 000):
// a configured destination always; an auto-created one once a consumer
// has it (one a producer created stays local); a temporary one while its
// consumer is there.
func (c *Core) propagates(d *dest) bool {
	if d.kind == Configured {
		return true
	}
	for _, in := range d.inst {
		if in.present && in.consumers > 0 {
			return true
		}
	}
	// An auto-created destination propagated once stays propagated until
	// it is reaped: its consumer moving away does not delete the copies.
	return d.kind == AutoCreated && len(d.present()) > 1
}

// reconcile decides what d needs at now.
func (c *Core) reconcile(d *dest, now time.Time) []Action {
	e := c.entries[d.entry]
	if d.reaped && c.busy(d) {
		// A consumer or a message came back before the reaping was done
		// (a delete refused, if unused or if empty): not idle after all.
		d.deleted, d.reaped, d.idleSince = false, false, time.Time{}
	}
	switch {
	case d.deleting != nil && now.Sub(d.deleting.since) >= e.ConfirmDelete:
		return c.confirmDeletion(d)
	case d.deleting != nil:
		return nil // nothing created while a deletion is being confirmed
	case d.deleted:
		return c.sweep(d, "deleted elsewhere")
	}
	if out := c.reap(d, now); out != nil {
		return out
	}
	var out []Action
	if c.propagates(d) {
		out = append(out, c.createMissing(d)...)
	}
	return append(out, c.mismatches(d)...)
}

// confirmDeletion carries a confirmed deletion to every other instance.
func (c *Core) confirmDeletion(d *dest) []Action {
	why := fmt.Sprintf("deleted at %s", d.deleting.at)
	if d.kind == Temporary {
		why = fmt.Sprintf("temporary, gone from %s with its consumer", d.deleting.at)
	}
	d.deleting, d.deleted = nil, true
	return c.sweep(d, why)
}

// sweep deletes what is left of a deleted destination: instances kept
// because they held messages are reported orphaned (and deleted once
// empty); copies created before the deletion and seen only after it go.
func (c *Core) sweep(d *dest, why string) []Action {
	e := c.entries[d.entry]
	var out []Action
	for _, b := range d.present() {
		in := d.inst[b]
		switch {
		case in.expectGone:
		case in.messages == 0 || e.DeleteNonEmpty:
			in.expectGone = true
			// Reaping an idle destination never takes a consumer's queue
			// away: the listing's consumer count can lag behind.
			out = append(out, Action{Kind: Delete, Broker: b, Name: d.name, IfEmpty: !e.DeleteNonEmpty || d.reaped, IfUnused: d.reaped, Msg: why})
		default:
			out = append(out, d.report("orphan:"+b, fmt.Sprintf("orphaned at %s: deleted elsewhere, kept here because it holds %d messages (delete it, or set delete_nonempty)", b, in.messages))...)
		}
	}
	return out
}

// busy says whether an instance of d has a consumer or a message.
func (c *Core) busy(d *dest) bool {
	for _, b := range d.present() {
		if in := d.inst[b]; in.consumers > 0 || in.messages > 0 {
			return true
		}
	}
	return false
}

// reap removes an auto-created destination idle everywhere for the
// entry's idle time (no consumer, no message at any instance).
func (c *Core) reap(d *dest, now time.Time) []Action {
	if d.kind != AutoCreated {
		return nil
	}
	if c.busy(d) {
		d.idleSince = time.Time{}
		return nil
	}
	if d.idleSince.IsZero() {
		d.idleSince = now
	}
	idle := c.entries[d.entry].Idle
	if now.Sub(d.idleSince) < idle {
		return nil
	}
	d.deleted, d.reaped = true, true
	return c.sweep(d, fmt.Sprintf("auto-created, no consumer and no message for %s", idle))
}

// createMissing asks for d at every broker of its span that answers and
// does not have it.
func (c *Core) createMissing(d *dest) []Action {
	var out []Action
	for _, b := range c.entries[d.entry].Brokers {
		in := d.inst[b]
		if !c.brokers[b].up() || (in != nil && (in.present || in.pending)) {
			continue
		}
		if in == nil {
			in = &inst{}
			d.inst[b] = in
		}
		in.pending = true
		out = append(out, Action{Kind: Create, Broker: b, Name: d.name, Props: d.props, Msg: fmt.Sprintf("%s, at %s", d.kind, d.origin)})
	}
	return out
}

// mismatches handles instances whose properties differ from d's: after a
// change, an empty one is deleted (and created again with the new ones);
// otherwise it is a conflict, reported, never overwritten.
func (c *Core) mismatches(d *dest) []Action {
	var out []Action
	fixed := c.entries[d.entry].Props != nil
	for _, b := range d.present() {
		in := d.inst[b]
		switch {
		case in.props.Equal(d.props):
			delete(d.reported, "props:"+b)
		case !fixed && in.messages == 0 && d.reported["changed:"+b] == "" && c.changedElsewhere(d, b):
			in.expectGone = true
			d.reported["changed:"+b] = "asked"
			out = append(out, Action{Kind: Delete, Broker: b, Name: d.name, IfEmpty: true, Msg: fmt.Sprintf("properties changed to %s: declared again", d.props)})
		default:
			whose := "the entry's"
			if !fixed {
				whose = "the destination's"
			}
			out = append(out, d.report("props:"+b, fmt.Sprintf("conflict at %s: its properties %s differ from %s %s; not changed (holds %d messages)", b, in.props, whose, d.props, in.messages))...)
		}
	}
	return out
}

// changedElsewhere says whether d's properties came from a change at
// another broker (an instance there holds them), rather than from the
// first instance seen: only then is b's old declaration replaced.
func (c *Core) changedElsewhere(d *dest, b string) bool {
	for _, o := range d.present() {
		if o != b && d.inst[o].props.Equal(d.props) {
			return true
		}
	}
	return false
}
