package routes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// Exchange routes on a link-state network: fan-out at the origin.
//
// Exchange routes copying one exchange with one key between brokers form a
// group (same exchange, same key, the destination exchange of the same
// name): a federated exchange, possibly a mesh. Copying hop by hop, each
// route judging each copy by its router's current table, cannot deliver
// exactly once while links flap: a copy is judged on different routers at
// different times, by different trees, and what a route's subscription
// collected while its link was down is judged again when it is back
// (docs/multihop.md). So, with link state on, a message is judged once, at
// the broker it was published at (its origin):
//
//   - every route of a group at broker O consumes one shared durable queue,
//     fedrouter.fanout.<exchange>.<group>, bound to the exchange with the
//     key, across routers; one of them at a time gets its messages (single
//     active consumer: order is kept, another takes over when it goes), so
//     each message is taken once;
//   - that route sends one copy of the message to each broker the group's
//     routes reach from O (its own routes and those the other routers
//     advertise, ExchangeEdge): straight into the exchange there when its
//     router is attached to that broker, else into O's transit queue for
//     it, addressed to the exchange; transit carries each copy along the
//     shortest live path, in one durable queue at a time, and reroutes it
//     when a link fails;
//   - the message is settled at O once every copy is accepted;
//   - a copy carries the group in x-fedrouter-fanned: arriving in the
//     exchange at its destination it lands in that broker's fan-out queue
//     too, and is dropped there (counted looped), not copied again.
//
// Every broker a group reaches gets one copy of each message, whatever the
// mesh; duplicates come only from a connection lost with outcomes in
// flight, as on any route.

// FanoutPrefix starts the name of the shared queue of a fan-out group at a
// broker: FanoutPrefix + exchange + "." + group id.
const FanoutPrefix = "fedrouter.fanout."

// ExchangeEdge is an exchange route that takes part in fan-out, as routers
// advertise it to each other (router.ExchangeRoutesExt).
type ExchangeEdge struct {
	Src      string `json:"src"`
	Dest     string `json:"dest"`
	Exchange string `json:"exchange"`
	Key      string `json:"key,omitempty"`
}

// Group identifies the edges one fan-out covers: the same exchange and key.
// Short and stable (it is in queue names and annotations).
func (e ExchangeEdge) Group() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%d:%s%s", len(e.Exchange), e.Exchange, e.Key))
	return hex.EncodeToString(h[:6])
}

func (e ExchangeEdge) sameGroup(o ExchangeEdge) bool {
	return e.Exchange == o.Exchange && e.Key == o.Key
}

// fanoutEdge says whether the route takes part in fan-out, and as which
// edge: exchange routes to the exchange of the same name. One with another
// destination exchange copies between two exchanges, not within one: it
// is judged hop by hop (meshHop).
func fanoutEdge(s Spec) (ExchangeEdge, bool) {
	if s.Kind != KindExchange || s.DestNode() != s.Exchange {
		return ExchangeEdge{}, false
	}
	return ExchangeEdge{Src: s.Src, Dest: s.Dest, Exchange: s.Exchange, Key: s.Key}, true
}

// sharedSubscriptions is what a profile says when a named subscription is
// one queue that consumers on several connections (several routers) share.
type sharedSubscriptions interface{ SharedSubscriptions() bool }

func sharesSubscriptions(p amqp.Profile) bool {
	s, ok := p.(sharedSubscriptions)
	return ok && s.SharedSubscriptions()
}

// fanoutSubscription is the group's shared queue at a broker: durable, so
// what a broker holds for the group outlives restarts of routers and of
// the broker; one consumer at a time, so the copies keep the order of
// publication and another route takes over when the active one goes.
func fanoutSubscription(e ExchangeEdge) amqp.Subscription {
	name := FanoutPrefix + e.Exchange + "." + e.Group()
	if len(name) > maxQueueName { // the group id alone still tells it apart
		name = FanoutPrefix + e.Group()
	}
	return amqp.Subscription{Name: name, Durable: true, Single: true}
}

// maxQueueName is the longest queue name brokers take (RabbitMQ, AMQP
// 0-9-1 short strings: 255 bytes).
const maxQueueName = 255

// ExchangeEdges returns this router's routes that take part in fan-out,
// sorted, for its advertisement.
// The slice is shared: callers must not change it.
func (m *Manager) ExchangeEdges() []ExchangeEdge {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.edges
}

// edgesAfterLocked recomputes m.edges after rs were added or removed,
// when one of them takes part in fan-out: no other route changes them,
// and recomputing walks every route (at 10,000 routes, most of an add's
// CPU). The caller holds m.mu.
func (m *Manager) edgesAfterLocked(rs ...*route) {
	for _, r := range rs {
		if r == nil {
			continue
		}
		if _, ok := r.mode.(*fanoutMode); ok {
			m.edgesLocked()
			return
		}
	}
}

// edgesLocked recomputes m.edges after the routes changed; the caller
// holds m.mu.
func (m *Manager) edgesLocked() {
	var out []ExchangeEdge
	for _, r := range m.routes {
		if f, ok := r.mode.(*fanoutMode); ok {
			out = append(out, f.edge)
		}
	}
	slices.SortFunc(out, compareEdges)
	m.edges = slices.Compact(out)
}

func compareEdges(a, b ExchangeEdge) int {
	return strings.Compare(a.Src+"\x00"+a.Dest+"\x00"+a.Exchange+"\x00"+a.Key, b.Src+"\x00"+b.Dest+"\x00"+b.Exchange+"\x00"+b.Key)
}

// groupEdges returns every known edge of e's group: this router's and the
// advertised ones.
func (m *Manager) groupEdges(e ExchangeEdge) []ExchangeEdge {
	own, adv := m.ExchangeEdges(), m.advertised()
	return groupOf(e, own, adv)
}

func (m *Manager) advertised() []ExchangeEdge {
	if m.opts.Table == nil {
		return nil
	}
	return m.opts.Table.Advertised()
}

func groupOf(e ExchangeEdge, lists ...[]ExchangeEdge) []ExchangeEdge {
	var out []ExchangeEdge
	for _, l := range lists {
		for _, o := range l {
			if o.sameGroup(e) {
				out = append(out, o)
			}
		}
	}
	return out
}

// reachCache keeps a route's last fan-out reach with the edge lists it
// was computed from (both are replaced, never changed, when they change:
// the same slice means the same edges). Used by the send loop only.
type reachCache struct {
	own, adv []ExchangeEdge
	targets  []string
}

func sameSlice(a, b []ExchangeEdge) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// reach returns the brokers the edges lead to from origin (following them
// in their direction, any number of times), sorted, without origin and
// without the brokers in skip.
func reach(origin string, edges []ExchangeEdge, skip []string) []string {
	seen := map[string]bool{origin: true}
	queue := []string{origin}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		for _, e := range edges {
			if e.Src == at && !seen[e.Dest] {
				seen[e.Dest] = true
				queue = append(queue, e.Dest)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for b := range seen {
		if b != origin && !slices.Contains(skip, b) {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// targetsAfter is fanoutTargets of a message whose trace is trace.
func (f *fanoutMode) targetsAfter(trace []string) []string {
	c := &f.reach
	own, adv := f.env.exchangeEdges(), f.env.advertised()
	if c.targets == nil || !sameSlice(own, c.own) || !sameSlice(adv, c.adv) {
		c.own, c.adv = own, adv
		c.targets = reach(f.spec.Src, groupOf(f.edge, own, adv), nil)
	}
	if len(trace) == 0 {
		return c.targets
	}
	return slices.DeleteFunc(slices.Clone(c.targets), func(b string) bool { return slices.Contains(trace, b) })
}

// fanned says whether the group has copied a message already: marks is
// its links.AnnotationFanned, the groups that copied it.
func fanned(marks, group string) bool {
	return marks != "" && slices.Contains(strings.Split(marks, ","), group)
}

// fanoutMode is an exchange route on a link-state network whose source
// can share a subscription: each message is taken once from the group's
// shared queue at the source and copied to every broker the group's
// routes reach (fanout_engine.go).
type fanoutMode struct {
	*routeBase
	edge          ExchangeEdge  // the route as its group sees it
	copies        atomic.Uint64 // copies sent
	copiesTransit atomic.Uint64 // of copies, those sent through transit
	reach         reachCache    // the send loop's
}

// source is the group's shared queue at the source broker.
func (f *fanoutMode) source(ctx context.Context) (amqp.LinkSpec, error) {
	return f.sourceAt(ctx, fanoutSubscription(f.edge))
}

func (f *fanoutMode) detail(pathpolicy.Path) string { return f.fanoutDetail() }

// unsubscribe removes the group's queue at the source, with the group's
// last route from there: it serves every route of the group from that
// broker, on any router.
func (f *fanoutMode) unsubscribe(ctx context.Context) {
	for _, e := range f.env.groupEdges(f.edge) {
		if e.Src == f.spec.Src {
			f.log.Info().Str("queue", fanoutSubscription(f.edge).Name).Str("kept_for", e.Src+" > "+e.Dest).Msg("the fan-out queue stays: another route of the group uses it")
			return
		}
	}
	f.unsubscribeAt(ctx, fanoutSubscription(f.edge))
}

func (f *fanoutMode) addStatus(st *Status) {
	st.Copies, st.CopiesViaTransit = f.copies.Load(), f.copiesTransit.Load()
}

// fanoutDetail says, for route list, where the route's fan-out copies go.
func (f *fanoutMode) fanoutDetail() string {
	targets := reach(f.spec.Src, f.env.groupEdges(f.edge), nil)
	return fmt.Sprintf("fan-out from %s to %s (shared queue %s)", f.spec.Src, strings.Join(targets, ", "), fanoutSubscription(f.edge).Name)
}
