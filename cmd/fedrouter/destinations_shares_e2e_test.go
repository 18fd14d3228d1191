package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/globaldest"
)

// sharesRouter starts router id over brokers bs, link state on (refresh
// 1s, max_age 3s) with one destinations: entry.
func sharesRouter(t *testing.T, id, control string, bs []brokertest.Broker, entry string) *routerProc {
	t.Helper()
	var y strings.Builder
	fmt.Fprintf(&y, "router_id: %s\nbrokers:\n", id)
	for _, b := range bs {
		fmt.Fprintf(&y, "  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}\n", b.Name, b.URL, b.MgmtURL)
	}
	fmt.Fprintf(&y, `topology: {secret: %q, refresh: 1s, max_age: 3s, control_address: %s}
destinations:
  - %s
reconnect: {min: 100ms, max: 1s}
admin: {listen: "127.0.0.1:0"}
log: {level: info, format: json}
`, e2eSecret, control, entry)
	path := filepath.Join(t.TempDir(), id+".yaml")
	if err := os.WriteFile(path, []byte(withAdminPort(t, y.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startRouter(t, path)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("router %s's log:\n%s", id, p.out.String())
		}
	})
	return p
}

// policyLengths reads the max-length of q's limit policy at each broker
// (0: no policy).
func policyLengths(bs []brokertest.Broker, q string) ([]int64, error) {
	out := make([]int64, len(bs))
	for i, b := range bs {
		req, err := http.NewRequest(http.MethodGet, b.MgmtURL+"/api/policies/%2F/"+url.PathEscape(amqp.LimitPolicyPrefix+q), nil)
		if err != nil {
			return nil, err
		}
		req.SetBasicAuth("guest", "guest")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		var p struct {
			Definition struct {
				MaxLength int64 `json:"max-length"`
			} `json:"definition"`
		}
		err = json.NewDecoder(resp.Body).Decode(&p)
		_ = resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound:
		case err != nil || resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("policy of %s at %s: HTTP %d (%v)", q, b.Name, resp.StatusCode, err)
		default:
			out[i] = p.Definition.MaxLength
		}
	}
	return out, nil
}

func sum64(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

// sharesView is router p's view of q's limits.
func sharesView(p *routerProc, q string) (*globaldest.LimitsView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := p.api().Destinations(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range st.Destinations {
		if d.Name == q && d.Limits != nil {
			return d.Limits, nil
		}
	}
	return nil, fmt.Errorf("%s: no limits view yet", q)
}

// decidedBy checks v: decider and routers as wanted, each broker of want
// with a share whose policy by puts (and no error putting it).
func decidedBy(v *globaldest.LimitsView, decider string, routers []string, by map[string]string) error {
	if v.Decider != decider || !slices.Equal(v.Routers, routers) {
		return fmt.Errorf("decider %q of %v, want %q of %v (%s)", v.Decider, v.Routers, decider, routers, v.Why)
	}
	for b, who := range by {
		i := slices.IndexFunc(v.Brokers, func(s globaldest.ShareView) bool { return s.Broker == b })
		switch {
		case i < 0:
			return fmt.Errorf("no share at %s", b)
		case v.Brokers[i].ShareMessages < 1 || v.Brokers[i].By != who || (v.Brokers[i].Policy != "" && !strings.HasPrefix(v.Brokers[i].Policy, "kept")):
			return fmt.Errorf("%s: %+v, want a share put by %s", b, v.Brokers[i], who)
		}
	}
	return nil
}

// fillAll: producers at every broker publish per messages each to q (no
// consumer) while the true total is sampled; the total never passes
// limit by more than the bound, some are refused, every confirmed one is
// there; then consumers drain them all. Seqs start at base. It returns
// the worst overshoot.
func (d *destRig) fillAll(q string, limit int64, per int, base int64) int64 {
	t := d.t
	t.Helper()
	f := d.fillSampled(d.depthProbe(q), q, base, per, pubOpts{window: 200, size: 16})
	accepted, refused, total := f.accepted, f.refused, f.total
	most := max(f.most, int64(total))
	bound := max(limit/100, 2000) // 1 %, or one credit window (routes.DefaultCredit)
	t.Logf("limit %d: published %d in %s: accepted %d, refused %d; the brokers hold %d %v; most sampled %d in %d samples; worst overshoot %d (bound %d)",
		limit, len(d.bs)*per, f.published.Round(time.Millisecond), len(accepted), len(refused), total, f.depths, f.most, f.samples, max(0, most-limit), bound)
	switch {
	case most > limit+bound:
		t.Errorf("the total reached %d: over the limit %d by more than %d", most, limit, bound)
	case len(refused) == 0:
		t.Error("no publish was refused")
	case total != len(accepted):
		t.Errorf("the brokers hold %d, the producers had %d confirmed", total, len(accepted))
	}
	seen, err := d.drain091(q, len(accepted), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, s := range accepted {
		if seen[s] == 0 {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d confirmed messages lost", lost)
	}
	t.Logf("drained: %d distinct, %d lost", len(seen), lost)
	// The drain's consumers gone, as the router sees them (the statistics
	// lag up to 5 s): no flow runs when the next step starts.
	drained := time.Now()
	brokertest.Eventually(t, time.Minute, 250*time.Millisecond, func() error {
		if time.Since(drained) < 7*time.Second {
			return fmt.Errorf("the consumers' going may not be counted yet")
		}
		return nil
	})
	d.waitNoConsumers(q)
	return max(0, most-limit)
}

// sharesRig: routers over rabbit1..4 sharing one limited destination q.
type sharesRig struct {
	*destRig
	control, q, stale string
	limit             int64
	procs             []*routerProc
}

// newSharesRig makes the names, the management clients and the cleanup:
// the routers killed first (nothing puts the policies again), then the
// queue, the policies and the control exchange deleted everywhere.
func newSharesRig(t *testing.T, limit int64) *sharesRig {
	bs := brokertest.Require(t, "rabbit1", "rabbit2", "rabbit3", "rabbit4")
	prefix := strings.ReplaceAll(brokertest.UniqueName(t, "shares"), "Test", "")
	r := &sharesRig{destRig: &destRig{t: t, bs: bs, prefix: prefix}, control: "ctl." + prefix, q: prefix + ".orders", stale: prefix + "-stale", limit: limit}
	for _, b := range bs {
		m, err := amqp.NewRabbitManagement(b.Config())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		r.mgmt = append(r.mgmt, m)
	}
	t.Cleanup(func() {
		for _, p := range r.procs {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
			}
		}
		for i, m := range r.mgmt {
			_ = m.DeleteQueue(context.Background(), r.q)
			_ = m.DeleteExchange(context.Background(), r.control)
			for _, name := range []string{r.q, r.stale} {
				req, err := http.NewRequest(http.MethodDelete, bs[i].MgmtURL+"/api/policies/%2F/"+url.PathEscape(amqp.LimitPolicyPrefix+name), nil)
				if err == nil {
					req.SetBasicAuth("guest", "guest")
					if resp, err := http.DefaultClient.Do(req); err == nil {
						_ = resp.Body.Close()
					}
				}
			}
		}
	})
	return r
}

func (r *sharesRig) start(id string, bs []brokertest.Broker, entry string) *routerProc {
	p := sharesRouter(r.t, id, r.control, bs, entry)
	r.procs = append(r.procs, p)
	return p
}

// waitDecided waits until A decides and has put every policy, B follows
// A's shares, and the policies in force are A's shares; it returns them.
func (r *sharesRig) waitDecided(a, b *routerProc) []int64 {
	all := map[string]string{}
	for _, br := range r.bs {
		all[br.Name] = "sharesa"
	}
	var lengths []int64
	brokertest.Eventually(r.t, 2*time.Minute, 200*time.Millisecond, func() error {
		va, err := sharesView(a, r.q)
		if err != nil {
			return fmt.Errorf("A: %w", err)
		}
		if err := decidedBy(va, "sharesa", []string{"sharesa", "sharesb"}, all); err != nil {
			return fmt.Errorf("A: %w", err)
		}
		vb, err := sharesView(b, r.q)
		if err != nil {
			return fmt.Errorf("B: %w", err)
		}
		if err := decidedBy(vb, "sharesa", []string{"sharesa", "sharesb"}, all); err != nil {
			return fmt.Errorf("B: %w", err)
		}
		if lengths, err = policyLengths(r.bs, r.q); err != nil {
			return err
		}
		for i, s := range va.Brokers {
			if lengths[i] != s.ShareMessages || vb.Brokers[i].ShareMessages != s.ShareMessages {
				return fmt.Errorf("policies in force %v; A's shares %+v, B's %+v", lengths, va.Brokers, vb.Brokers)
			}
		}
		return nil
	})
	return lengths
}

// checkSweep starts a third router over rabbit2 limiting other queues:
// its start-time sweep removes the stale policy there, keeps A's.
func (r *sharesRig) checkSweep() {
	t := r.t
	c := r.start("sharesc", r.bs[1:2], fmt.Sprintf("{name: %q, limits: {max_messages: 100}}", r.prefix+"-c.*"))
	brokertest.Eventually(t, time.Minute, 200*time.Millisecond, func() error {
		if !strings.Contains(c.out.String(), "another live router limits it") {
			return fmt.Errorf("C has not swept rabbit2 yet")
		}
		return nil
	})
	if code := r.policyStatus(r.bs[1], r.stale); code != http.StatusNotFound {
		t.Errorf("the stale policy at rabbit2: HTTP %d, want 404 (removed by C's sweep)", code)
	}
	if code := r.policyStatus(r.bs[1], r.q); code != http.StatusOK {
		t.Errorf("A's policy of %s at rabbit2: HTTP %d, want 200 (kept by C's sweep)", r.q, code)
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// takeover kills A (-9) and waits until B decides and has put its three
// policies; it returns how long after the kill.
func (r *sharesRig) takeover(a, b *routerProc) time.Duration {
	puts := strings.Count(b.out.String(), "limits: share put")
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	_ = a.cmd.Wait()
	killed := time.Now()
	var took time.Duration
	mine := map[string]string{"rabbit2": "sharesb", "rabbit3": "sharesb", "rabbit4": "sharesb"}
	brokertest.Eventually(r.t, 2*time.Minute, 100*time.Millisecond, func() error {
		vb, err := sharesView(b, r.q)
		if err != nil {
			return err
		}
		if err := decidedBy(vb, "sharesb", []string{"sharesb"}, mine); err != nil {
			return err
		}
		if n := strings.Count(b.out.String(), "limits: share put"); n < puts+3 {
			return fmt.Errorf("B put %d policies since the kill, want 3", n-puts)
		}
		took = time.Since(killed)
		return nil
	})
	return took
}

// checkAfterTakeover: rabbit1 keeps the policy A put (no live router
// reaches it); B counts for it the share A advertised last, never less
// than A put; B's shares sum to the limit, its policies are in force, and
// all of them sum to the limit at most.
func (r *sharesRig) checkAfterTakeover(b *routerProc, when string) []int64 {
	var lengths []int64
	brokertest.Eventually(r.t, time.Minute, 200*time.Millisecond, func() error {
		vb, err := sharesView(b, r.q)
		if err != nil {
			return err
		}
		if lengths, err = policyLengths(r.bs, r.q); err != nil {
			return err
		}
		var shares int64
		for i, s := range vb.Brokers {
			shares += s.ShareMessages
			switch {
			case i == 0 && lengths[0] > s.ShareMessages:
				return fmt.Errorf("rabbit1's policy %d, B counts %d for it", lengths[0], s.ShareMessages)
			case i > 0 && lengths[i] != s.ShareMessages:
				return fmt.Errorf("policies in force %v, B's shares %+v", lengths, vb.Brokers)
			}
		}
		if shares != r.limit || sum64(lengths) > r.limit {
			return fmt.Errorf("B's shares sum to %d, the policies in force %v to %d; want %d", shares, lengths, sum64(lengths), r.limit)
		}
		return nil
	})
	r.t.Logf("%s: policies in force %v (sum %d)", when, lengths, sum64(lengths))
	return lengths
}

// Two routers over overlapping brokers — A (id sharesa) over rabbit1..4,
// B (sharesb) over rabbit2..4 — with one limited destination (10,000
// messages) agree through their advertisements: A, the lowest id,
// decides and puts the four policies, which sum to the limit; B puts
// none and follows A's shares. A third router starting over rabbit2
// removes a stale policy there but keeps A's. Producers at all four:
// never over the limit by more than the bound. A killed -9: B takes over
// after max_age (3 s) and a listing, keeps rabbit1's share as A put it
// (no live router can change it) and shares the rest; the policies in
// force sum to the limit at most, and producers at all four again stay
// within the bound. A restarted: it decides again, B hands over.
func TestGlobalDestinationsSharesAcrossRouters(t *testing.T) {
	parallelE2E(t, &limitsLane, &linkStateLane)
	r := newSharesRig(t, 10000)
	// A policy no router limits, left at rabbit2: the third router removes it.
	putPolicy(t, r.bs[1], amqp.LimitPolicyPrefix+r.stale, fmt.Sprintf(`{"pattern":"^%s$","apply-to":"queues","priority":100,"definition":{"max-length":1}}`, r.stale))
	// Messages stay where published (no flow holds any in flight): the
	// depths sampled are exactly what the producers had confirmed.
	entry := fmt.Sprintf("{name: %q, follow_consumers: false, limits: {max_messages: %d}}", r.prefix+".*", r.limit)
	a := r.start("sharesa", r.bs, entry)
	b := r.start("sharesb", r.bs[1:], entry)
	if err := r.mgmt[0].DeclareQueue(context.Background(), r.q, amqp.QueueArgs{Durable: true}); err != nil {
		t.Fatal(err)
	}
	lengths := r.waitDecided(a, b)
	if s := sum64(lengths); s != r.limit {
		t.Errorf("the policies in force %v sum to %d, want %d", lengths, s, r.limit)
	}
	if strings.Contains(b.out.String(), "limits: share put") {
		t.Errorf("B put a policy while A decides:\n%s", grepLines(b.out.String(), "limits: share"))
	}
	outA, _ := a.cli("destination", "list")
	outB, _ := b.cli("destination", "list")
	t.Logf("A decides; policies in force %v (sum %d)\nA's view:\n%s\nB's view:\n%s", lengths, sum64(lengths), outA, outB)
	if !strings.Contains(outB, "shares decided by sharesa (routers over the span: sharesa, sharesb)") {
		t.Errorf("B's destination list does not say who decides")
	}
	r.checkSweep()

	r.p = a
	time.Sleep(time.Second) // a policy applies moments after its PUT (asynchronously)
	over1 := r.fillAll(r.q, r.limit, 5000, 0)

	took := r.takeover(a, b)
	r.checkAfterTakeover(b, "after the takeover")
	t.Logf("A killed: B decides and has put its policies %s later (max_age 3s, listing 2s)", took.Round(time.Millisecond))
	r.p = b
	time.Sleep(time.Second)
	over2 := r.fillAll(r.q, r.limit, 5000, 10_000_000)
	lengths = r.checkAfterTakeover(b, "after the second fill")
	outB, _ = b.cli("destination", "list")
	t.Logf("worst overshoot: %d with A deciding, %d with B; policies in force %v\nB's view:\n%s", over1, over2, lengths, outB)
	r.comeBack(a, b)
}

// comeBack restarts A: it waits, follows B's shares, then decides again
// from them; B hands its policies over. The policies in force, sampled
// meanwhile, never sum to more than the limit.
func (r *sharesRig) comeBack(a, b *routerProc) {
	t := r.t
	stop := make(chan struct{})
	most := make(chan int64, 1)
	go func() { // joined through most
		var m int64
		for {
			if l, err := policyLengths(r.bs, r.q); err == nil {
				m = max(m, sum64(l))
			}
			select {
			case <-stop:
				most <- m
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	back := time.Now()
	a2 := startRouter(t, a.config)
	r.procs = append(r.procs, a2)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("router sharesa's log after its restart:\n%s", a2.out.String())
		}
	})
	lengths := r.waitDecided(a2, b)
	took := time.Since(back)
	close(stop)
	m := <-most
	if sum64(lengths) != r.limit || m > r.limit {
		t.Errorf("A back: policies in force %v (sum %d), the most sampled meanwhile %d; want %d at most", lengths, sum64(lengths), m, r.limit)
	}
	if !strings.Contains(b.out.String(), "limits: share handed to the router that decides") {
		t.Errorf("B did not hand its policies over")
	}
	t.Logf("A back: decides again %s after its start; policies in force %v (sum %d), the most sampled meanwhile %d", took.Round(time.Millisecond), lengths, sum64(lengths), m)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Two routers over rabbit1..4 that configure different limits (A 10,000
// messages, B 8,000): the smallest holds — the policies A puts sum to
// 8,000 — and both say so (the view's differs, the log, the metric).
func TestGlobalDestinationsSharesDifferentLimits(t *testing.T) {
	parallelE2E(t, &limitsLane, &linkStateLane)
	r := newSharesRig(t, 8000)
	entry := func(limit int) string {
		return fmt.Sprintf("{name: %q, follow_consumers: false, limits: {max_messages: %d}}", r.prefix+".*", limit)
	}
	a := r.start("sharesa", r.bs, entry(10000))
	b := r.start("sharesb", r.bs, entry(8000))
	if err := r.mgmt[0].DeclareQueue(context.Background(), r.q, amqp.QueueArgs{Durable: true}); err != nil {
		t.Fatal(err)
	}
	var lengths []int64
	brokertest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		for _, p := range []*routerProc{a, b} {
			v, err := sharesView(p, r.q)
			if err != nil {
				return err
			}
			if v.Decider != "sharesa" || !strings.Contains(v.Differs, "configure different limits") || !strings.HasPrefix(v.Limits, "max_messages=8000 ") {
				return fmt.Errorf("decider %q, limits %q, differs %q", v.Decider, v.Limits, v.Differs)
			}
		}
		var err error
		if lengths, err = policyLengths(r.bs, r.q); err != nil {
			return err
		}
		if sum64(lengths) != 8000 || slices.Contains(lengths, 0) {
			return fmt.Errorf("policies in force %v", lengths)
		}
		return nil
	})
	for _, p := range []*routerProc{a, b} {
		m, err := p.api().Metrics(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m, "fedrouter_destination_limits_disagree 1") {
			t.Errorf("the metric does not count the disagreement")
		}
		if !strings.Contains(p.out.String(), "configure different limits") {
			t.Errorf("the log does not say the routers disagree")
		}
	}
	out, _ := b.cli("destination", "list")
	t.Logf("policies in force %v (sum %d)\nB's view:\n%s", lengths, sum64(lengths), out)
}

// A over rabbit1..3, B over rabbit2..4: A decides over all four (B
// advertises rabbit4's depth), B puts rabbit4's policy with A's share —
// and only that one; the policies in force sum to the limit; producers
// at all four stay within the bound.
func TestGlobalDestinationsSharesPutForTheDecider(t *testing.T) {
	parallelE2E(t, &limitsLane, &linkStateLane)
	r := newSharesRig(t, 10000)
	entry := fmt.Sprintf("{name: %q, follow_consumers: false, limits: {max_messages: %d}}", r.prefix+".*", r.limit)
	a := r.start("sharesa", r.bs[:3], entry)
	b := r.start("sharesb", r.bs[1:], entry)
	if err := r.mgmt[0].DeclareQueue(context.Background(), r.q, amqp.QueueArgs{Durable: true}); err != nil {
		t.Fatal(err)
	}
	by := map[string]string{"rabbit1": "sharesa", "rabbit2": "sharesa", "rabbit3": "sharesa", "rabbit4": "sharesb"}
	check := func() []int64 {
		var lengths []int64
		brokertest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
			var views []*globaldest.LimitsView
			for _, p := range []*routerProc{a, b} {
				v, err := sharesView(p, r.q)
				if err != nil {
					return err
				}
				if err := decidedBy(v, "sharesa", []string{"sharesa", "sharesb"}, by); err != nil {
					return err
				}
				views = append(views, v)
			}
			var err error
			if lengths, err = policyLengths(r.bs, r.q); err != nil {
				return err
			}
			for i, s := range views[0].Brokers {
				if lengths[i] != s.ShareMessages || views[1].Brokers[i].ShareMessages != s.ShareMessages {
					return fmt.Errorf("policies in force %v; A's shares %+v, B's %+v", lengths, views[0].Brokers, views[1].Brokers)
				}
			}
			if sum64(lengths) != r.limit {
				return fmt.Errorf("policies in force %v sum to %d", lengths, sum64(lengths))
			}
			return nil
		})
		return lengths
	}
	lengths := check()
	for _, l := range strings.Split(grepLines(b.out.String(), "limits: share put"), "\n") {
		if l != "" && !strings.Contains(l, `"broker":"rabbit4"`) {
			t.Errorf("B put a policy at a broker A puts: %s", l)
		}
	}
	outA, _ := a.cli("destination", "list")
	t.Logf("policies in force %v (sum %d)\nA's view:\n%s", lengths, sum64(lengths), outA)
	r.p = a
	time.Sleep(time.Second) // a policy applies moments after its PUT (asynchronously)
	over := r.fillAll(r.q, r.limit, 5000, 0)
	lengths = check()
	t.Logf("worst overshoot %d; policies in force after %v (sum %d)", over, lengths, sum64(lengths))
}
