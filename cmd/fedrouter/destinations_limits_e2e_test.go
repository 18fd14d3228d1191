package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/globaldest"
	"github.com/fedrouter/fedrouter/routes"
)

// The limits' tests publish and count over AMQP 0-9-1 (publisher confirms,
// passive declares): RabbitMQ 3.10's AMQP 1.0 plugin answers a refused
// publish by closing the connection (amqp.TestIntegrationRabbitQueueLimit)
// — no way to publish 40,000 at a limit — and a passive declare gives a
// queue's true depth at once, where the management API's lags by up to 5 s.

// dial091 opens an AMQP 0-9-1 connection to broker b (guest/guest).
func (d *destRig) dial091(b int) *amqp091.Connection {
	d.t.Helper()
	u, err := url.Parse(d.bs[b].URL)
	if err != nil {
		d.t.Fatal(err)
	}
	u.User, u.Path = url.UserPassword("guest", "guest"), "/"
	c, err := amqp091.Dial(u.String())
	if err != nil {
		d.t.Fatalf("AMQP 0-9-1 to %s: %v", d.bs[b].Name, err)
	}
	d.t.Cleanup(func() { _ = c.Close() })
	return c
}

// depthProbe reads q's true depth at every broker (passive declares).
type depthProbe struct {
	chs []*amqp091.Channel
	q   string
}

func (d *destRig) depthProbe(q string) *depthProbe {
	p := &depthProbe{q: q}
	for i := range d.bs {
		ch, err := d.dial091(i).Channel()
		if err != nil {
			d.t.Fatal(err)
		}
		p.chs = append(p.chs, ch)
	}
	return p
}

// depths returns each broker's depth and their sum.
func (p *depthProbe) depths() ([]int, int, error) {
	out := make([]int, len(p.chs))
	sum := 0
	for i, ch := range p.chs {
		qi, err := ch.QueueDeclarePassive(p.q, true, false, false, false, nil)
		if err != nil {
			return nil, 0, err
		}
		out[i] = qi.Messages
		sum += qi.Messages
	}
	return out, sum, nil
}

// sampler samples the true total until stopped: the most seen, how often.
type sampler struct {
	most, samples atomic.Int64
	stop          chan struct{}
	done          chan error
}

func (p *depthProbe) sample(every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan error, 1)}
	go func() { // owned: joined by end
		for {
			_, sum, err := p.depths()
			if err != nil {
				s.done <- err
				return
			}
			s.samples.Add(1)
			if int64(sum) > s.most.Load() {
				s.most.Store(int64(sum))
			}
			select {
			case <-s.stop:
				s.done <- nil
				return
			case <-time.After(every):
			}
		}
	}()
	return s
}

func (s *sampler) end() error { close(s.stop); return <-s.done }

// publishResult is what one producer saw.
type publishResult struct {
	accepted, refused []int64
	firstRefusal      time.Time
	acceptedAfter     time.Time // the first acceptance after a refusal
}

// pubOpts shape a producer: at most window unconfirmed, bodies of size
// bytes after the seq; with stopAt, it stops once that many were
// confirmed (n is then the most it tries), pausing pause after each
// refusal.
type pubOpts struct {
	window, size, stopAt int
	pause                time.Duration
	deadline             time.Time // with stopAt: stop then at the latest
}

// publish091 publishes n messages to q at broker b with publisher
// confirms, each carrying its seq in the body; it says which the broker
// confirmed (ack) and which it refused (nack).
func (d *destRig) publish091(b int, q string, base int64, n int, o pubOpts) (publishResult, error) {
	window := o.window
	ch, err := d.dial091(b).Channel()
	if err != nil {
		return publishResult{}, err
	}
	if err := ch.Confirm(false); err != nil {
		return publishResult{}, err
	}
	confirms := ch.NotifyPublish(make(chan amqp091.Confirmation, window))
	var res publishResult
	inflight := map[uint64]int64{}
	wait := func() error {
		select {
		case c, ok := <-confirms:
			if !ok {
				return fmt.Errorf("channel at %s closed", d.bs[b].Name)
			}
			seq := inflight[c.DeliveryTag]
			delete(inflight, c.DeliveryTag)
			switch {
			case c.Ack && !res.firstRefusal.IsZero() && res.acceptedAfter.IsZero():
				res.acceptedAfter = time.Now()
				fallthrough
			case c.Ack:
				res.accepted = append(res.accepted, seq)
			default:
				if res.firstRefusal.IsZero() {
					res.firstRefusal = time.Now()
				}
				res.refused = append(res.refused, seq)
				time.Sleep(o.pause)
			}
			return nil
		case <-time.After(time.Minute):
			return fmt.Errorf("no confirm from %s in a minute", d.bs[b].Name)
		}
	}
	pad := make([]byte, o.size)
	for i := range n {
		if o.stopAt > 0 && (len(res.accepted) >= o.stopAt || time.Now().After(o.deadline)) {
			break
		}
		seq := base + int64(i)
		tag := ch.GetNextPublishSeqNo()
		body := append([]byte(fmt.Sprintf("%010d ", seq)), pad...)
		if err := ch.PublishWithContext(context.Background(), "", q, false, false, amqp091.Publishing{Body: body, DeliveryMode: amqp091.Persistent}); err != nil {
			return res, err
		}
		inflight[tag] = seq
		for len(inflight) >= window {
			if err := wait(); err != nil {
				return res, err
			}
		}
	}
	for len(inflight) > 0 {
		if err := wait(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// drain091 consumes q at every broker until want distinct seqs arrived
// (or timeout), acknowledging each; it returns the seqs seen.
func (d *destRig) drain091(q string, want int, timeout time.Duration) (map[int64]int, error) {
	var mu sync.Mutex
	seen := map[int64]int{}
	var chs []*amqp091.Channel
	for i := range d.bs {
		ch, err := d.dial091(i).Channel()
		if err != nil {
			return nil, err
		}
		if err := ch.Qos(500, 0, false); err != nil {
			return nil, err
		}
		dl, err := ch.Consume(q, "", false, false, false, false, nil)
		if err != nil {
			return nil, err
		}
		chs = append(chs, ch)
		go func() { // ends when its channel closes (below)
			for m := range dl {
				s, _, _ := cutSpace(m.Body)
				seq, err := strconv.ParseInt(s, 10, 64)
				mu.Lock()
				if err == nil {
					seen[seq]++
				}
				mu.Unlock()
				_ = m.Ack(false) // a lost ack redelivers: counted as a duplicate
			}
		}()
	}
	defer func() {
		for _, ch := range chs {
			_ = ch.Close()
		}
	}()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= want {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	out := make(map[int64]int, len(seen))
	for k, v := range seen {
		out[k] = v
	}
	return out, nil
}

func cutSpace(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == ' ' {
			return string(b[:i]), b[i+1:], true
		}
	}
	return string(b), nil, false
}

// limitsView waits until the router has set q's shares at every broker
// and returns its view.
func (d *destRig) limitsView(q string, timeout time.Duration) *globaldest.LimitsView {
	d.t.Helper()
	var view *globaldest.LimitsView
	brokertest.Eventually(d.t, timeout, 200*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := d.p.api().Destinations(ctx)
		if err != nil {
			return err
		}
		for _, ds := range st.Destinations {
			if ds.Name != q || ds.Limits == nil {
				continue
			}
			for _, b := range ds.Limits.Brokers {
				if b.Policy != "" {
					return fmt.Errorf("%s: %s", b.Broker, b.Policy)
				}
			}
			if len(ds.Limits.Brokers) == len(d.bs) {
				view = ds.Limits
				return nil
			}
		}
		return fmt.Errorf("%s: no limits view yet", q)
	})
	return view
}

// waitNoConsumers waits until the router sees no consumer of q anywhere
// (the statistics lag the consumers' going by up to 5 s).
func (d *destRig) waitNoConsumers(q string) {
	d.t.Helper()
	brokertest.Eventually(d.t, time.Minute, 250*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := d.p.api().Destinations(ctx)
		if err != nil {
			return err
		}
		for _, ds := range st.Destinations {
			for _, in := range ds.Instances {
				if ds.Name == q && in.Consumers > 0 {
					return fmt.Errorf("%d consumers at %s", in.Consumers, in.Broker)
				}
			}
		}
		return nil
	})
}

// sampledFill is what fillSampled saw.
type sampledFill struct {
	accepted, refused []int64
	published         time.Duration // how long the producers took
	depths            []int         // each broker's depth at the end
	total             int           // their sum
	most, samples     int64         // the sampler's: the most seen, how often
}

// fillSampled: producers at every broker publish n each to q at once
// (broker i's seqs from base+i*1_000_000, shaped by o) while probe
// samples the true total. It fails the test on a producer's error.
func (d *destRig) fillSampled(probe *depthProbe, q string, base int64, n int, o pubOpts) sampledFill {
	t := d.t
	t.Helper()
	smp := probe.sample(20 * time.Millisecond)
	results := make([]publishResult, len(d.bs))
	errs := make([]error, len(d.bs))
	var wg sync.WaitGroup
	start := time.Now()
	for i := range d.bs {
		wg.Add(1)
		go func() { // joined by wg
			defer wg.Done()
			results[i], errs[i] = d.publish091(i, q, base+int64(i)*1_000_000, n, o)
		}()
	}
	wg.Wait()
	f := sampledFill{published: time.Since(start)}
	// The brokers are quiet: the total now is the last word.
	var err error
	if f.depths, f.total, err = probe.depths(); err != nil {
		t.Fatal(err)
	}
	if err := smp.end(); err != nil {
		t.Fatal(err)
	}
	f.most, f.samples = smp.most.Load(), smp.samples.Load()
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("producer at %s: %v", d.bs[i].Name, errs[i])
		}
		f.accepted = append(f.accepted, r.accepted...)
		f.refused = append(f.refused, r.refused...)
	}
	return f
}

// fillAndDrain: producers at every broker publish perBroker each to q
// (bodies of size bytes) with no consumer, while the true total is
// sampled; then consumers at every broker drain it. unit is "messages" or
// "bytes" (every body has the same size), the limit in that unit. It
// checks the bound, the refusals, the count and the drain, and returns
// the probe and what was accepted.
func (d *destRig) fillAndDrain(q, unit string, limit int64, perBroker, size int) (*depthProbe, []int64) {
	t := d.t
	t.Helper()
	bodyLen := int64(len(fmt.Sprintf("%010d ", 0)) + size)
	per := int64(1)
	if unit == "bytes" {
		per = bodyLen
	}
	probe := d.depthProbe(q)
	f := d.fillSampled(probe, q, 0, perBroker, pubOpts{window: 200, size: size})
	accepted, refused, total := f.accepted, f.refused, f.total
	most := max(f.most, int64(total)) * per
	bound := max(limit/100, 2000*per) // 1 %, or one credit window (routes.DefaultCredit)
	t.Logf("limit %d %s: published %d in %s: accepted %d, refused %d; true total at the end %d messages (%v), %d %s; most sampled %d %s in %d samples; worst overshoot %d %s (bound %d)",
		limit, unit, len(d.bs)*perBroker, f.published.Round(time.Millisecond), len(accepted), len(refused), total, f.depths, int64(total)*per, unit,
		f.most*per, unit, f.samples, most-limit, unit, bound)
	switch {
	case most > limit+bound:
		t.Errorf("the total reached %d: over the limit %d by more than %d", most, limit, bound)
	case len(refused) == 0:
		t.Error("no publish was refused")
	case total != len(accepted), unit == "bytes" && int64(total)*per > limit:
		// No consumer: every confirmed message is still there, and only those.
		t.Errorf("the brokers hold %d (%d bytes), the producers had %d confirmed", total, int64(total)*bodyLen, len(accepted))
	}
	// The router sees it (the statistics lag up to 5 s): at the limit,
	// credit withheld.
	brokertest.Eventually(t, time.Minute, 250*time.Millisecond, func() error {
		v := d.limitsView(q, 10*time.Second)
		held := 0
		for _, b := range v.Brokers {
			if b.Held {
				held++
			}
		}
		// At the limit, or (bytes: bodies of 100 may not fill it to the
		// byte) every broker near its share: every gate closed.
		if v.Messages != int64(total) || held != len(d.bs) || (unit == "messages" && !v.Withhold) {
			return fmt.Errorf("the router sees %d messages (%d bytes), withhold %v, %d brokers held", v.Messages, v.Bytes, v.Withhold, held)
		}
		return nil
	})
	out, _ := d.p.cli("destination", "list")
	t.Logf("at the limit:\n%s", out)
	metrics, err := d.p.api().Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("fedrouter_destination_limit{destination=%q,unit=%q} %s", q, unit, promNum(limit)),
		fmt.Sprintf("fedrouter_destination_limit_total{destination=%q,unit=%q} %s", q, unit, promNum(int64(total)*per)),
		"fedrouter_destination_limit_refusals_total ",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Consumers at every broker drain them all.
	d.drainAll(q, accepted)
	return probe, accepted
}

// drainAll consumes q at every broker until every confirmed message
// arrived, fails the test for each one lost, and returns the duplicates
// (a flow cut mid-move leaves copies of what it moved and had not settled).
func (d *destRig) drainAll(q string, accepted []int64) int {
	d.t.Helper()
	seen, err := d.drain091(q, len(accepted), 2*time.Minute)
	if err != nil {
		d.t.Fatal(err)
	}
	lost, dups := 0, 0
	for _, s := range accepted {
		if seen[s] == 0 {
			lost++
		}
	}
	for _, n := range seen {
		dups += n - 1
	}
	if lost > 0 {
		d.t.Errorf("%d confirmed messages lost (%d distinct received of %d)", lost, len(seen), len(accepted))
	}
	d.t.Logf("drained: %d distinct received, %d lost, %d duplicates", len(seen), lost, dups)
	return dups
}

// A limit of 10,000 messages over rabbit1..4, producers at all four
// publishing 40,000 in all with no consumer: the true total (the four
// depths, sampled by passive declares) never passes the limit by more
// than max(1 %, one credit window); the producers see refusals; every
// message confirmed is there; consumers drain them all and the producers
// are accepted again; a producer at one broker that fills its share is
// accepted again once the shares move to it (the rebalance's reaction
// time, measured). On each data path: the flows feeding the instances
// are gated on either.
func TestGlobalDestinationsLimitsAddUp(t *testing.T) {
	parallelE2E(t, &limitsLane)
	for _, dp := range []string{routes.DataPathEngine} {
		t.Run(dp, func(t *testing.T) { limitsAddUp(t, dp) })
	}
}

func limitsAddUp(t *testing.T, dataPath string) {
	const limit = 10000
	d := newDestRigOn(t, dataPath, "h-gd", fmt.Sprintf("settle: 2s, limits: {max_messages: %d}", limit))
	q := d.globalQueue()
	view := d.limitsView(q, 60*time.Second)
	time.Sleep(time.Second) // a policy applies moments after its PUT (asynchronously)
	t.Logf("shares before: %+v", view.Brokers)
	probe, _ := d.fillAndDrain(q, "messages", limit, 10000, 16)

	// No consumer anymore; the shares as the router sees it now.
	brokertest.Eventually(t, time.Minute, 250*time.Millisecond, func() error {
		_, sum, err := probe.depths()
		if err != nil || sum != 0 {
			return fmt.Errorf("total %d after the drain (%v)", sum, err)
		}
		return nil
	})
	drained := time.Now()
	brokertest.Eventually(t, time.Minute, 250*time.Millisecond, func() error {
		if time.Since(drained) < 7*time.Second { // the statistics' 5 s, and a listing
			return fmt.Errorf("the consumers' going may not be counted yet")
		}
		return nil
	})
	d.waitNoConsumers(q)
	// One producer at rabbit1, 1,000 more than its share, fast (200
	// unconfirmed: faster than the statistics, which would otherwise move
	// the shares before it is refused): refused at its share, accepted
	// again once the shares move to it.
	view = d.limitsView(q, 10*time.Second)
	want := int(view.Brokers[0].ShareMessages) + 1000
	r, err := d.publish091(0, q, 9_000_000, 1_000_000, pubOpts{window: 200, size: 16, stopAt: want, pause: 10 * time.Millisecond,
		deadline: time.Now().Add(90 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	// Every message confirmed is there once no flow holds any unacknowledged
	// (a passive declare counts the ready ones; the router may see a
	// consumer the statistics still count, and run a flow meanwhile). A
	// flow that moved messages into an instance at its share is cut by
	// the broker (RabbitMQ 3.10 closes the connection): what it had moved
	// and not settled stays at both ends, at most a credit window of
	// copies — counted when drained below, never a loss.
	var total int
	brokertest.Eventually(t, time.Minute, 250*time.Millisecond, func() error {
		var err error
		if _, total, err = probe.depths(); err != nil || total < len(r.accepted) {
			return fmt.Errorf("total %d, accepted %d (%v)", total, len(r.accepted), err)
		}
		return nil
	})
	reaction := time.Duration(0)
	if !r.acceptedAfter.IsZero() {
		reaction = r.acceptedAfter.Sub(r.firstRefusal)
	}
	t.Logf("one producer at rabbit1 (share %d): accepted %d, refused %d; accepted again %s after its first refusal (the rebalance's reaction; 0 if the shares moved before any refusal); total %d",
		view.Brokers[0].ShareMessages, len(r.accepted), len(r.refused), reaction.Round(time.Millisecond), total)
	if len(r.accepted) < want {
		t.Errorf("rabbit1 accepted %d, refused %d; want %d: the shares did not move to it", len(r.accepted), len(r.refused), want)
	}
	if total > limit {
		t.Errorf("total %d over the limit %d", total, limit)
	}
	out, _ := d.p.cli("destination", "list")
	t.Logf("after:\n%s", out)
	if dups := d.drainAll(q, r.accepted); dups > routes.DefaultCredit {
		t.Errorf("%d duplicates, more than a credit window (%d)", dups, routes.DefaultCredit)
	}
}

// The same with max_bytes: 1,000,000 bytes over rabbit1..4, producers at
// all four publishing 100-byte bodies, 40,000 in all (4,000,000 bytes),
// on each data path.
func TestGlobalDestinationsBytesLimitsAddUp(t *testing.T) {
	parallelE2E(t, &limitsLane)
	for _, dp := range []string{routes.DataPathEngine} {
		t.Run(dp, func(t *testing.T) { bytesLimitsAddUp(t, dp) })
	}
}

func bytesLimitsAddUp(t *testing.T, dataPath string) {
	const limit = 1_000_000
	d := newDestRigOn(t, dataPath, "h-gd", fmt.Sprintf("settle: 2s, limits: {max_bytes: %d}", limit))
	q := d.globalQueue()
	view := d.limitsView(q, 60*time.Second)
	time.Sleep(time.Second) // a policy applies moments after its PUT (asynchronously)
	t.Logf("shares before: %+v", view.Brokers)
	d.fillAndDrain(q, "bytes", limit, 10000, 89)
	// The destination goes (deleted everywhere): so do its policies.
	for _, b := range d.bs {
		if code := d.policyStatus(b, q); code != http.StatusOK {
			t.Fatalf("the policy of %s at %s: HTTP %d, want 200 while it is limited", q, b.Name, code)
		}
	}
	for _, m := range d.mgmt {
		if err := m.DeleteQueue(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	brokertest.Eventually(t, time.Minute, 250*time.Millisecond, func() error {
		for _, b := range d.bs {
			if code := d.policyStatus(b, q); code != http.StatusNotFound {
				return fmt.Errorf("the policy of %s at %s: HTTP %d, want 404", q, b.Name, code)
			}
		}
		return nil
	})
}

// policyStatus is the HTTP status of the GET of q's limit policy at b.
func (d *destRig) policyStatus(b brokertest.Broker, q string) int {
	req, err := http.NewRequest(http.MethodGet, b.MgmtURL+"/api/policies/%2F/"+url.PathEscape("fedrouter-limit-"+q), nil)
	if err != nil {
		d.t.Fatal(err)
	}
	req.SetBasicAuth("guest", "guest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// Flows respect the limit (issue 29, item 7): 3,000 messages at rabbit1
// under a limit of 4,000 (the shares moved to rabbit1), and a consumer at rabbit4 that takes one and
// never acknowledges it (0-9-1, prefetch 1): the messages flow to
// rabbit4, whose share bounds what it takes — what it refuses goes back
// to rabbit1, released, never rejected — and at the end every message
// confirmed is at rabbit1, at rabbit4, or in the consumer's hand; never
// over the limit; a consumer that then acknowledges gets them all. On
// each data path (on the engine, the flow into rabbit4 is seen there).
func TestGlobalDestinationsFlowsRespectLimits(t *testing.T) {
	parallelE2E(t, &limitsLane)
	for _, dp := range []string{routes.DataPathEngine} {
		t.Run(dp, func(t *testing.T) { flowsRespectLimits(t, dp) })
	}
}

func flowsRespectLimits(t *testing.T, dataPath string) {
	const limit, n = 4000, 3000
	// A share an earlier configuration left at rabbit2, for a queue no
	// entry limits: the router removes it when it starts.
	stale := brokertest.UniqueName(t, "h-gd-stale")
	b2 := brokertest.Require(t, "rabbit2")[0]
	putPolicy(t, b2, "fedrouter-limit-"+stale, `{"pattern":"^h-gd-stale-nothing$","apply-to":"queues","priority":100,"definition":{"max-length":1}}`)
	d := newDestRigOn(t, dataPath, "h-gd", fmt.Sprintf("settle: 2s, max_hops: 10, limits: {max_messages: %d}", limit))
	brokertest.Eventually(t, time.Minute, 250*time.Millisecond, func() error {
		if code := d.policyStatus(b2, stale); code != http.StatusNotFound {
			return fmt.Errorf("the stale policy at rabbit2: HTTP %d, want 404 (removed at start)", code)
		}
		return nil
	})
	q := d.globalQueue()
	d.limitsView(q, 60*time.Second)
	time.Sleep(time.Second) // a policy applies moments after its PUT (asynchronously)
	probe := d.depthProbe(q)
	// Published one at a time until 3,000 are in: the shares move to
	// rabbit1 (it is pressed), leaving the others small.
	r, err := d.publish091(0, q, 0, 1_000_000, pubOpts{window: 1, size: 16, stopAt: n, pause: 10 * time.Millisecond,
		deadline: time.Now().Add(2 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	view := d.limitsView(q, 10*time.Second)
	t.Logf("at rabbit1: %d accepted, %d refused on the way; shares %+v", len(r.accepted), len(r.refused), view.Brokers)
	smp := probe.sample(20 * time.Millisecond)
	ch, err := d.dial091(3).Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Consume(q, "holder", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	// The flow runs and moves what rabbit4's share lets it; wait until
	// the router has seen rabbit4 hold messages and a while more.
	var st []int
	brokertest.Eventually(t, 2*time.Minute, 250*time.Millisecond, func() error {
		depths, _, err := probe.depths()
		if err != nil {
			return err
		}
		st = depths
		if depths[3] < 100 {
			return fmt.Errorf("depths %v: the flow has not moved much to rabbit4 yet", depths)
		}
		return nil
	})
	d.flowOn(q, "rabbit4", dataPath)
	time.Sleep(10 * time.Second) // the flow and the shares go on moving: what we want to see
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if err := smp.end(); err != nil {
		t.Fatal(err)
	}
	api := d.p.api()
	ds, err := api.Destinations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen, err := d.drain091(q, len(r.accepted), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, s := range r.accepted {
		if seen[s] == 0 {
			lost++
		}
	}
	t.Logf("depths while moving %v; most sampled %d (limit %d); moved %d, refused by the limit %d; drained %d distinct of %d accepted, %d lost",
		st, smp.most.Load(), limit, ds.Counts.Moved, ds.Counts.LimitRefusals, len(seen), len(r.accepted), lost)
	if lost > 0 {
		t.Errorf("%d confirmed messages lost", lost)
	}
	if smp.most.Load() > limit+2000 {
		t.Errorf("the total reached %d, over %d by more than a credit window", smp.most.Load(), limit)
	}
}

// flowOn waits until the router runs a flow of q into broker dest
// Operational on dataPath (route list's detail names the engine there).
func (d *destRig) flowOn(q, dest, dataPath string) {
	d.t.Helper()
	brokertest.Eventually(d.t, time.Minute, 100*time.Millisecond, func() error {
		sts, err := d.p.api().Routes(context.Background())
		if err != nil {
			return err
		}
		var seen []string
		for _, st := range sts {
			if st.Spec.DestQueue != q || st.Spec.Dest != dest || st.Spec.MaxMoves == 0 {
				continue
			}
			seen = append(seen, fmt.Sprintf("%s: %s (%s)", st.Spec, st.State, st.Detail))
			if st.State == routes.StateOperational && strings.Contains(st.Detail, "engine") == (dataPath == routes.DataPathEngine) {
				return nil
			}
		}
		return fmt.Errorf("no flow of %s into %s Operational on %s: %v", q, dest, dataPath, seen)
	})
}

// promNum is n as the metrics' text format writes it (1e+06).
func promNum(n int64) string { return strconv.FormatFloat(float64(n), 'g', -1, 64) }

// putPolicy puts policy name at b with body (JSON), and deletes it at
// cleanup.
func putPolicy(t *testing.T, b brokertest.Broker, name, body string) {
	t.Helper()
	path := b.MgmtURL + "/api/policies/%2F/" + url.PathEscape(name)
	for _, m := range []string{http.MethodPut, http.MethodGet} {
		req, err := http.NewRequest(m, path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("guest", "guest")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: HTTP %d", m, path, resp.StatusCode)
		}
		if m == http.MethodPut {
			body = ""
		}
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, path, nil)
		req.SetBasicAuth("guest", "guest")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	})
}
