package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/globaldest"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// tally is what consumers of a global destination received: every
// delivery's sequence number and how often it had moved.
type tally struct {
	mu    sync.Mutex
	seqs  []int64
	moves map[int64]int64 // the most moves seen for a seq
	at    map[string]int  // deliveries per broker
}

func newTally() *tally { return &tally{moves: map[int64]int64{}, at: map[string]int{}} }

func (ty *tally) add(broker string, msg amqp.Message) error {
	seq, ok := msg.Property("seq").(int64)
	if !ok {
		return fmt.Errorf("a message without seq at %s", broker)
	}
	var n int64
	switch v := msg.Annotation(links.AnnotationMoves).(type) {
	case nil:
	case int64:
		n = v
	default:
		return fmt.Errorf("seq %d at %s: %s is %T %v", seq, broker, links.AnnotationMoves, v, v)
	}
	ty.mu.Lock()
	defer ty.mu.Unlock()
	ty.seqs = append(ty.seqs, seq)
	ty.moves[seq] = max(ty.moves[seq], n)
	ty.at[broker]++
	return nil
}

func (ty *tally) distinct() int {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	return len(ty.moves)
}

// hops is how many messages moved how often: "0:12 1:9988".
func (ty *tally) hops() (string, int64) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	count := map[int64]int{}
	var most int64
	for _, n := range ty.moves {
		count[n]++
		most = max(most, n)
	}
	keys := make([]int64, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%d:%d ", k, count[k])
	}
	return strings.TrimSpace(b.String()), most
}

// consume receives q at broker b, accepting each message into ty, until
// ctx ends; it returns the error that ended it, if any other. (Ended
// while it still attaches — a broker slow to answer on a loaded machine —
// it received nothing: nothing to report.)
func (d *destRig) consume(ctx context.Context, b int, q string, ty *tally) error {
	c, err := amqp.Dial(ctx, d.bs[b].Config(), amqp.ConnOptions{})
	if err != nil {
		return unlessEnded(ctx, err)
	}
	defer func() { _ = c.Close() }()
	s, _, err := c.NewSession(ctx)
	if err != nil {
		return unlessEnded(ctx, err)
	}
	r, err := amqp.NewReceiver(ctx, s, amqp.LinkSpec{Address: "/amq/queue/" + q}, amqp.ReceiverConfig{Window: 200})
	if err != nil {
		return unlessEnded(ctx, err)
	}
	for {
		msg, err := r.Receive(ctx)
		if err != nil {
			return unlessEnded(ctx, err)
		}
		if err := ty.add(d.bs[b].Name, msg); err != nil {
			return err
		}
		if err := r.Accept(ctx, msg); err != nil && ctx.Err() == nil {
			return err
		}
	}
}

// unlessEnded is err, or nil once ctx has ended.
func unlessEnded(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// globalQueue declares the durable queue <prefix>.orders at rabbit1 and
// waits until the router has created it at rabbit2..4.
func (d *destRig) globalQueue() string {
	d.t.Helper()
	q := d.prefix + ".orders"
	if err := d.mgmt[0].DeclareQueue(context.Background(), q, amqp.QueueArgs{Durable: true}); err != nil {
		d.t.Fatal(err)
	}
	d.waitEverywhere(q, map[string]any{}, 30*time.Second)
	return q
}

// consuming runs consume in the background; stop ends it and returns its
// error.
func (d *destRig) consuming(b int, q string, ty *tally) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.consume(ctx, b, q, ty) }()
	return func() error { cancel(); return <-done }
}

// flows returns q's flows as the router's admin API shows them.
func (d *destRig) flows(q string) ([]globaldest.Flow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := d.p.api().Destinations(ctx)
	if err != nil {
		return nil, err
	}
	for _, ds := range st.Destinations {
		if ds.Name == q {
			return ds.Flows, nil
		}
	}
	return nil, fmt.Errorf("%s is not a global destination (yet)", q)
}

// A producer at rabbit1, the only consumer at rabbit4: the messages follow
// the consumer — 10,000 consumed at rabbit4, none lost, each moved once.
func TestGlobalDestinationsMessagesFollowConsumer(t *testing.T) {
	parallelE2E(t)
	d := newDestRig(t, "settle: 2s, max_hops: 2")
	q := d.globalQueue()
	ty := newTally()
	stop := d.consuming(3, q, ty)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("consumer at rabbit4: %v", err)
		}
	}()
	const n = 10000
	s := brokertest.Session(t, brokertest.Dial(t, d.bs[0].Config(), amqp.ConnOptions{}))
	start := time.Now()
	brokertest.SendAll(t, s, "/amq/queue/"+q, 200, n, func(i int) *goamqp.Message { return brokertest.Numbered(i) })
	published := time.Since(start)
	brokertest.Eventually(t, 3*time.Minute, 200*time.Millisecond, func() error {
		if got := ty.distinct(); got < n {
			fs, err := d.flows(q)
			return fmt.Errorf("%d of %d consumed at rabbit4; flows %+v (%v)", got, n, fs, err)
		}
		return nil
	})
	all := time.Since(start)
	hops, most := ty.hops()
	ty.mu.Lock()
	dups := brokertest.CheckNoLoss(t, ty.seqs, n)
	ty.mu.Unlock()
	if most != 1 || dups > 2000 {
		t.Errorf("hops per message %s (want each moved once), %d duplicates (at most a credit window, 2000)", hops, dups)
	}
	// A move counts once the router has the target's acceptance, which
	// may come after the consumer had the message: poll.
	var fs []globaldest.Flow
	var moved uint64
	var route string
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		var err error
		if fs, err = d.flows(q); err != nil {
			return err
		}
		for _, f := range fs {
			if f.From == "rabbit1" && f.To == "rabbit4" {
				moved, route = f.Moved, f.Route
			}
		}
		if moved < n {
			return fmt.Errorf("the flow rabbit1 > rabbit4 moved %d, want at least %d: %+v", moved, n, fs)
		}
		return nil
	})
	// The flow is the router's, not the API's to delete.
	api := d.p.api()
	var ae *adminclient.Error
	if err := api.DeleteRouteID(context.Background(), route); !errors.As(err, &ae) || ae.Status != 409 || !strings.Contains(err.Error(), "global destination") {
		t.Errorf("deleting the flow's route %s through the API: %v, want 409 naming the global destination", route, err)
	}
	// The metrics say the same. The consumer counts come from the
	// brokers' listings, which RabbitMQ refreshes every few seconds (a
	// CI run once read 2 consumers at rabbit4 for the test's one): poll.
	var metrics string
	brokertest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		var err error
		if metrics, err = api.Metrics(context.Background()); err != nil {
			return err
		}
		for _, want := range []string{
			fmt.Sprintf("fedrouter_destination_consumers{broker=\"rabbit4\",destination=%q} 1", q),
			`fedrouter_destinations{state="global"} 1`,
		} {
			if !strings.Contains(metrics, want) {
				return fmt.Errorf("/metrics lacks %s", want)
			}
		}
		return nil
	})
	if !regexp.MustCompile(`(?m)^fedrouter_destination_flows [1-3]$`).MatchString(metrics) {
		t.Error("/metrics: fedrouter_destination_flows is not 1 to 3")
	}
	if m := regexp.MustCompile(`fedrouter_destination_flow_messages_total\{outcome="moved"\} (\d+)`).FindStringSubmatch(metrics); m == nil || len(m[1]) < 5 {
		t.Errorf("/metrics: moved %v, want at least %d", m, n)
	}
	out, code := d.p.cli("destination", "list")
	if code != 0 || !strings.Contains(out, "rabbit4 (") {
		t.Errorf("destination list does not show the flow: exit %d\n%s", code, out)
	}
	t.Logf("%d published at rabbit1 in %s; all consumed at rabbit4 %s after the first was published; moves per message %s; %d duplicates; flows %+v\n%s",
		n, published.Round(time.Millisecond), all.Round(time.Millisecond), hops, dups, fs, out)
}

// Consumers hop between the brokers every second for 60 s while a
// producer publishes at rabbit1 and one at rabbit3: nothing is lost and
// no message moves more than max_hops times.
func TestGlobalDestinationsMovingConsumers(t *testing.T) {
	parallelE2E(t)
	if testing.Short() {
		t.Skip("60 s of moving consumers")
	}
	const maxHops = 2
	d := newDestRig(t, fmt.Sprintf("settle: 2s, max_hops: %d", maxHops))
	ctx := context.Background()
	q := d.globalQueue()
	ty := newTally()
	// Two producers, 50 messages a second each, numbered apart.
	pctx, stopProducers := context.WithTimeout(ctx, 60*time.Second)
	defer stopProducers()
	var wg sync.WaitGroup
	sent := make([]int, 2)
	perr := make([]error, 2)
	for p, b := range []int{0, 2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[p], perr[p] = d.produce(pctx, b, q, int64(p)*1_000_000)
		}()
	}
	// One consumer at a time, at rabbit1, 2, 3, 4, 1, ... a second each.
	for i := 0; pctx.Err() == nil; i++ {
		cctx, cancel := context.WithTimeout(pctx, time.Second)
		if err := d.consume(cctx, i%4, q, ty); err != nil {
			t.Logf("consumer at %s: %v", d.bs[i%4].Name, err) // a hop cut short; its unsettled messages go back
		}
		cancel()
	}
	wg.Wait()
	for p, err := range perr {
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("producer %d stopped after %d accepted: %v", p, sent[p], err) // what it accepted is what counts
		}
	}
	during := ty.distinct()
	// Then consumers everywhere until every message is in.
	want := sent[0] + sent[1]
	var drains []func() error
	for b := range 4 {
		drains = append(drains, d.consuming(b, q, ty))
	}
	brokertest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if got := ty.distinct(); got < want {
			return fmt.Errorf("%d of %d consumed", got, want)
		}
		return nil
	})
	for _, stop := range drains {
		if err := stop(); err != nil {
			t.Errorf("draining consumer: %v", err)
		}
	}
	ty.mu.Lock()
	dups := brokertest.CheckNoLossFrom(t, filterSeqs(ty.seqs, 0), 0, sent[0])
	dups += brokertest.CheckNoLossFrom(t, filterSeqs(ty.seqs, 1_000_000), 1_000_000, 1_000_000+sent[1])
	at := fmt.Sprint(ty.at)
	ty.mu.Unlock()
	hops, most := ty.hops()
	if most > maxHops {
		t.Errorf("a message moved %d times, max_hops %d: moves per message %s", most, maxHops, hops)
	}
	st, err := d.p.api().Destinations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d published (rabbit1 %d, rabbit3 %d) in 60 s with the consumer hopping every second; %d consumed during, the rest after; 0 lost; %d duplicates; moves per message %s (max_hops %d); deliveries per broker %s; flows started %d, stopped %d; moved %d, parked %d",
		want, sent[0], sent[1], during, dups, hops, maxHops, at, st.Counts.FlowsStarted, st.Counts.FlowsStopped, st.Counts.Moved, st.Counts.Parked)
}

// filterSeqs returns the seqs of one producer (numbered from base).
func filterSeqs(seqs []int64, base int64) []int64 {
	var out []int64
	for _, s := range seqs {
		if s >= base && s < base+1_000_000 {
			out = append(out, s)
		}
	}
	return out
}

// produce publishes Numbered messages from base to q at broker b, 50 a
// second, until ctx ends; it returns how many were accepted.
func (d *destRig) produce(ctx context.Context, b int, q string, base int64) (int, error) {
	c, err := amqp.Dial(ctx, d.bs[b].Config(), amqp.ConnOptions{})
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	s, _, err := c.NewSession(ctx)
	if err != nil {
		return 0, err
	}
	snd, err := s.NewSender(ctx, amqp.LinkSpec{Address: "/amq/queue/" + q})
	if err != nil {
		return 0, err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return i, ctx.Err()
		case <-tick.C:
		}
		m := brokertest.Numbered(int(base) + i)
		m.ApplicationProperties["seq"] = base + int64(i)
		rc, err := snd.Send(ctx, amqp.WrapMessage(m))
		if err == nil {
			var o amqp.Outcome
			if o, err = rc.Wait(ctx); err == nil && o.Kind != amqp.Accepted {
				err = fmt.Errorf("seq %d: %v", base+int64(i), o)
			}
		}
		if err != nil {
			return i, err
		}
	}
}

// The ping-pong guard for real, max_hops 1: messages that moved to
// rabbit2's consumer once stay at rabbit2 when that consumer goes to
// rabbit3 (the flow parks them and rests) while new ones published at
// rabbit2 still move; a consumer back at rabbit2 gets them all.
func TestGlobalDestinationsMaxHopsKeepsMessages(t *testing.T) {
	parallelE2E(t)
	for _, dp := range []string{routes.DataPathEngine} {
		t.Run(dp, func(t *testing.T) { maxHopsKeepsMessages(t, dp) })
	}
}

func maxHopsKeepsMessages(t *testing.T, dataPath string) {
	d := newDestRigOn(t, dataPath, "gd", "settle: 2s, max_hops: 1")
	ctx := context.Background()
	q := d.globalQueue()
	// rabbit2's consumer takes one message and holds it: the others moved
	// there wait in its queue.
	hs := brokertest.Session(t, brokertest.Dial(t, d.bs[1].Config(), amqp.ConnOptions{}))
	holder, err := amqp.NewReceiver(ctx, hs, amqp.LinkSpec{Address: "/amq/queue/" + q}, amqp.ReceiverConfig{Window: 1, MaxUnsettled: 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	s1 := brokertest.Session(t, brokertest.Dial(t, d.bs[0].Config(), amqp.ConnOptions{}))
	brokertest.SendAll(t, s1, "/amq/queue/"+q, 100, n, func(i int) *goamqp.Message { return brokertest.Numbered(i) })
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	if _, err := holder.Receive(rctx); err != nil {
		t.Fatalf("rabbit2's consumer got nothing: %v", err)
	}
	cancel()
	d.waitDepth(1, q, n, time.Minute) // ready and unacknowledged
	// The consumer moves to rabbit3.
	ty := newTally()
	stop := d.consuming(2, q, ty)
	amqp.CloseSession(hs) // the held message goes back: rabbit2 holds all n, each moved once
	brokertest.Eventually(t, time.Minute, 200*time.Millisecond, func() error {
		st, err := d.p.api().Destinations(ctx)
		if err != nil {
			return err
		}
		if st.Counts.Parked < n {
			return fmt.Errorf("%d parked, want the %d at rabbit2; flows %+v", st.Counts.Parked, n, st.Destinations)
		}
		return nil
	})
	// New messages at rabbit2 still move.
	s2 := brokertest.Session(t, brokertest.Dial(t, d.bs[1].Config(), amqp.ConnOptions{}))
	brokertest.SendAll(t, s2, "/amq/queue/"+q, 10, 10, func(i int) *goamqp.Message { return brokertest.Numbered(n + i) })
	brokertest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if got := ty.distinct(); got < 10 {
			return fmt.Errorf("%d of the 10 new messages at rabbit3", got)
		}
		return nil
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	ty.mu.Lock()
	for _, seq := range ty.seqs {
		if seq < n {
			t.Errorf("seq %d, which had moved max_hops times, moved again to rabbit3", seq)
		}
	}
	ty.mu.Unlock()
	d.waitDepth(1, q, n, time.Minute)
	// A consumer back at rabbit2 gets the n, each moved once.
	back := newTally()
	stopBack := d.consuming(1, q, back)
	brokertest.Eventually(t, time.Minute, 200*time.Millisecond, func() error {
		if got := back.distinct(); got < n {
			return fmt.Errorf("%d of %d back at rabbit2", got, n)
		}
		return nil
	})
	if err := stopBack(); err != nil {
		t.Fatal(err)
	}
	hops, most := back.hops()
	if most != 1 {
		t.Errorf("moves per message at rabbit2: %s, want each 1", hops)
	}
	st, err := d.p.api().Destinations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("max_hops 1: %d messages moved to rabbit2 stayed there when the consumer went to rabbit3 (parked %d times in all), 10 new ones at rabbit2 moved to rabbit3, the %d consumed at rabbit2 later (moves %s); counts %+v",
		n, st.Counts.Parked, n, hops, st.Counts)
}

// waitDepth waits until q at broker b holds want messages (the management
// API's statistics: they lag by up to 5 s).
func (d *destRig) waitDepth(b int, q string, want int, timeout time.Duration) {
	d.t.Helper()
	brokertest.Eventually(d.t, timeout, 250*time.Millisecond, func() error {
		got, _, err := d.mgmt[b].QueueMessages(context.Background(), q)
		if err != nil || got != want {
			return fmt.Errorf("%s at %s holds %d, want %d (%v)", q, d.bs[b].Name, got, want, err)
		}
		return nil
	})
}

// The consumers' broker dies (kill -9) with messages on the way to it:
// nothing is lost. What was in flight goes back to rabbit1 and follows
// the consumer to rabbit3; what rabbit4 had accepted is there when it is
// back, and moves on to rabbit3 too.
func TestGlobalDestinationsConsumersBrokerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts rabbit4")
	}
	d := newDestRig(t, "settle: 2s, max_hops: 2")
	q := d.globalQueue()
	ty := newTally()
	stop4 := d.consuming(3, q, ty)
	pctx, stopProducer := context.WithCancel(context.Background())
	defer stopProducer()
	var sent int
	produced := make(chan error, 1)
	go func() {
		var err error
		sent, err = d.produce(pctx, 0, q, 0)
		produced <- err
	}()
	brokertest.Eventually(t, 2*time.Minute, 100*time.Millisecond, func() error {
		if got := ty.distinct(); got < 500 {
			return fmt.Errorf("%d consumed at rabbit4 so far", got)
		}
		return nil
	})
	brokertest.Kill(t, "rabbit4")
	killed := time.Now()
	t.Logf("rabbit4 killed after %d consumed there (consumer: %v)", ty.distinct(), stop4())
	stop3 := d.consuming(2, q, ty)
	brokertest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		fs, err := d.flows(q)
		for _, f := range fs {
			if f.From == "rabbit1" && f.To == "rabbit3" && f.Moved > 0 {
				return nil
			}
		}
		return fmt.Errorf("rabbit1's messages do not move to rabbit3 yet: %+v (%v)", fs, err)
	})
	followed := time.Since(killed)
	brokertest.Restart(t, "rabbit4")
	stopProducer()
	if err := <-produced; err != nil && !errors.Is(err, context.Canceled) {
		// RabbitMQ may refuse a publish under load (it once answered
		// transfer-limit-exceeded here): what it accepted is what counts.
		t.Logf("producer stopped after %d accepted: %v", sent, err)
	}
	brokertest.Eventually(t, 3*time.Minute, 200*time.Millisecond, func() error {
		if got := ty.distinct(); got < sent {
			fs, err := d.flows(q)
			return fmt.Errorf("%d of %d consumed; flows %+v (%v)", got, sent, fs, err)
		}
		return nil
	})
	if err := stop3(); err != nil {
		t.Errorf("consumer at rabbit3: %v", err)
	}
	ty.mu.Lock()
	dups := brokertest.CheckNoLossFrom(t, filterSeqs(ty.seqs, 0), 0, sent)
	at := fmt.Sprint(ty.at)
	ty.mu.Unlock()
	hops, most := ty.hops()
	if most > 2 {
		t.Errorf("a message moved %d times (max_hops 2): %s", most, hops)
	}
	t.Logf("%d published at rabbit1; rabbit4 killed mid-stream and restarted; rabbit1's messages moved to rabbit3 %s after the kill; all consumed, 0 lost, %d duplicates; moves per message %s; deliveries per broker %s",
		sent, followed.Round(time.Millisecond), dups, hops, at)
}
