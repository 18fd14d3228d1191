package globaldest

import (
	"time"
)

// Consumers at brokers this router is not attached to, as the routers
// attached there advertise them (router/globaldest_remote.go): such a
// broker is a flow's target when none of this router's brokers has
// consumers — the flow crosses the mesh on the link-state paths. A remote
// broker is never a source, and nothing is created or deleted there: its
// own routers do that.

// Remote: the consumers other routers advertise at now, by broker and
// destination name; brokers this router lists itself must be left out
// (its own listing is fresher). A broker no longer in the map has none.
func (c *Core) Remote(consumers map[string]map[string]int, now time.Time) {
	for _, d := range c.dests {
		for b := range d.remote {
			if consumers[b] == nil {
				d.remoteSeen(b, 0, now)
			}
		}
		for b, qs := range consumers {
			if n, ok := qs[d.name]; ok || d.remote[b] != nil {
				d.remoteSeen(b, n, now)
			}
		}
	}
}

// remoteSeen records n consumers advertised for d at broker b; a broker
// without consumers since Settle ago is forgotten once no flow targets it.
func (d *dest) remoteSeen(b string, n int, now time.Time) {
	in := d.remote[b]
	if in == nil {
		in = &inst{}
		d.remote[b] = in
	}
	in.consumersSeen(in.present, n, now)
	in.present, in.consumers = true, n
}

// forgetRemote drops remote brokers with no consumers that no flow
// targets (called after the flows are decided).
func (d *dest) forgetRemote() {
	targeted := map[string]bool{}
	for _, f := range d.flows {
		targeted[f.to] = true
	}
	for b, in := range d.remote {
		if in.consumers == 0 && !targeted[b] {
			delete(d.remote, b)
		}
	}
}
