package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/store/storetest"
)

// clusterMember starts router id as a member of cluster name, attached to
// rabbit brokers r1 and r2.
func clusterMember(t *testing.T, id, name, store string, bs []brokertest.Broker, hb, lease string, local ...string) *routerProc {
	t.Helper()
	path := pairConfig(t, t.TempDir(), id, bs)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "cluster: {name: %s, store: %q, heartbeat: %s, lease: %s, local_brokers: [%s]}\n", name, store, hb, lease, strings.Join(local, ", "))
	if err = errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	return startRouter(t, path)
}

// api is an admin API client of the member (faster to poll than the CLI).
func (p *routerProc) api() *adminclient.Client {
	p.t.Helper()
	if p.client != nil {
		return p.client
	}
	cfg, err := config.Load(p.config)
	if err != nil {
		p.t.Fatal(err)
	}
	e, err := cfg.AdminEndpoint()
	if err != nil {
		p.t.Fatal(err)
	}
	api, err := adminclient.New(p.admin, adminclient.Options{Token: e.Token, CAFile: e.CAFile})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(api.Close)
	p.client = api
	return api
}

// held merges the members' own views: each route with its holder and the
// holder's live status, read through their admin APIs.
func held(t *testing.T, members map[string]*routerProc) map[string]routes.Status {
	t.Helper()
	out := map[string]routes.Status{}
	for id, p := range members {
		sts, err := p.api().Routes(context.Background())
		if err != nil {
			t.Fatalf("member %s: %v", id, err)
		}
		for _, st := range sts {
			if st.Holder == id {
				out[st.ID] = st
			}
		}
	}
	return out
}

// clusterName is a cluster name of the test's own (the store keys rows by
// cluster: tests sharing the database do not see each other's).
func clusterName(t *testing.T) string {
	name := strings.ReplaceAll(brokertest.UniqueName(t, "c"), ".", "-")
	return name[max(0, len(name)-60):]
}

// clusterRig is a cluster under test: members, and durable queue routes
// r1 src_i -> r2 ex_i (fanout to dq_i) added through the first member.
type clusterRig struct {
	t       *testing.T
	name    string
	url     string
	bs      []brokertest.Broker
	members map[string]*routerProc
	srcs    []string
	dqs     []string
	credit  int
}

func newClusterRig(t *testing.T, ids []string, routesN, credit int) *clusterRig {
	t.Helper()
	c := &clusterRig{t: t, url: storetest.URL(t), bs: brokertest.Require(t, "rabbit1", "rabbit2"), members: map[string]*routerProc{}, credit: credit}
	c.name = clusterName(t)
	for _, id := range ids {
		c.join(id)
	}
	for i := range routesN {
		src, ex, dq := brokertest.UniqueName(t, fmt.Sprint("src", i)), brokertest.UniqueName(t, fmt.Sprint("ex", i)), brokertest.UniqueName(t, fmt.Sprint("dq", i))
		brokertest.DeclareQueue(t, c.bs[0].Config(), src)
		brokertest.DeclareExchangeQueue(t, c.bs[1].Config(), ex, "fanout", dq, "")
		if out, code := c.members[ids[0]].cli("queue", "add", "-d", "--credit", fmt.Sprint(credit), "r2", "r1", ex, src); code != 0 {
			t.Fatalf("queue add: exit %d: %s", code, out)
		}
		c.srcs, c.dqs = append(c.srcs, src), append(c.dqs, dq)
	}
	return c
}

// join starts member id (heartbeat 500ms, lease 2s).
func (c *clusterRig) join(id string) {
	p := clusterMember(c.t, id, c.name, c.url, c.bs, "500ms", "2s")
	c.members[id] = p
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("member %s's log:\n%s", id, clusterLines(p.out.String()))
		}
	})
}

// spread waits until every route is held and Operational with at most
// max routes per member, and returns the holders.
func (c *clusterRig) spread(max int) map[string]routes.Status {
	c.t.Helper()
	var h map[string]routes.Status
	brokertest.Eventually(c.t, 30*time.Second, 100*time.Millisecond, func() error {
		h = held(c.t, c.members)
		count := map[string]int{}
		for _, st := range h {
			if st.State != routes.StateOperational {
				return fmt.Errorf("route %s on %s: %s %s", st.ID, st.Holder, st.State, st.LastError)
			}
			count[st.Holder]++
		}
		if len(h) != len(c.srcs) {
			return fmt.Errorf("%d of %d routes held: %v", len(h), len(c.srcs), count)
		}
		for id, n := range count {
			if n > max {
				return fmt.Errorf("member %s holds %d routes: %v", id, n, count)
			}
		}
		return nil
	})
	return h
}

// send publishes messages [from, to) to every route's source.
func (c *clusterRig) send(from, to int) {
	c.t.Helper()
	s := brokertest.Session(c.t, brokertest.Dial(c.t, c.bs[0].Config(), amqp.ConnOptions{}))
	for _, src := range c.srcs {
		brokertest.SendAll(c.t, s, "/amq/queue/"+src, 500, to-from, func(i int) *goamqp.Message { return brokertest.Numbered(from + i) })
	}
}

// collect checks that every route delivered [0, n) and returns the
// duplicates per route.
func (c *clusterRig) collect(n int) []int {
	c.t.Helper()
	var dups []int
	for _, dq := range c.dqs {
		got := brokertest.Collect(c.t, brokertest.Dial(c.t, c.bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+dq, n, 60*time.Second)
		dups = append(dups, brokertest.CheckNoLoss(c.t, got, n))
	}
	return dups
}

// Three members share six durable queue routes added through one of
// them; one is killed with -9 in the middle of the stream: the others take
// its routes over when its leases expire, and every message arrives,
// duplicates at most a credit window per route.
func TestClusterMemberKilledRoutesTakenOver(t *testing.T) {
	const n = 3000
	c := newClusterRig(t, []string{"ma", "mb", "mc"}, 6, 100)
	victim := ""
	for _, st := range c.spread(6/3 + 1) {
		if victim == "" || st.Holder < victim {
			victim = st.Holder
		}
	}
	// Half the stream before the kill, half while the routes move (they
	// wait at the source for the new holder).
	c.send(0, n/2)
	brokertest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		var fwd uint64
		for _, st := range c.members[victim].routes() {
			if st.Holder == victim {
				fwd += st.Forwarded
			}
		}
		if fwd < n/8 {
			return fmt.Errorf("%s forwarded %d", victim, fwd)
		}
		return nil
	})
	var moved []string
	for id, st := range held(t, c.members) {
		if st.Holder == victim {
			moved = append(moved, id)
		}
	}
	apis := map[string]*adminclient.Client{}
	for id, p := range c.members {
		if id != victim {
			apis[id] = p.api()
		}
	}
	killed := time.Now()
	if err := c.members[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.members[victim].cmd.Wait()
	delete(c.members, victim)
	// A few messages on every route at once, so that each moved route has
	// something to forward the moment it is taken over: the takeover time
	// is from the kill to the first message the new holder forwarded,
	// polled every 20 ms through the admin API.
	c.send(n/2, n/2+10)
	firstFwd := map[string]time.Duration{}
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		for id, api := range apis {
			sts, err := api.Routes(context.Background())
			if err != nil {
				return err
			}
			for _, st := range sts {
				if _, seen := firstFwd[st.ID]; !seen && st.Holder == id && st.Forwarded > 0 && slices.Contains(moved, st.ID) {
					firstFwd[st.ID] = time.Since(killed)
				}
			}
		}
		if len(firstFwd) < len(moved) {
			return fmt.Errorf("%d of %d moved routes forwarded by their new holder", len(firstFwd), len(moved))
		}
		return nil
	})
	takeover := time.Duration(0)
	for _, d := range firstFwd {
		takeover = max(takeover, d)
	}
	c.send(n/2+10, n)
	dups := c.collect(n)
	total := 0
	for i, d := range dups {
		if d > c.credit {
			t.Errorf("route %d: %d duplicates, more than its credit %d", i, d, c.credit)
		}
		total += d
	}
	var survivor *routerProc
	takeovers := uint64(0)
	for _, p := range c.members {
		survivor = p
		out, code := p.cli("cluster", "status", "--json")
		var st api.ClusterStatus
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
			t.Fatalf("cluster status --json: exit %d, %v:\n%s", code, err, out)
		}
		takeovers += st.Metrics.Takeovers
	}
	if takeovers < uint64(len(moved)) {
		t.Errorf("the survivors count %d takeovers; %d routes were taken over", takeovers, len(moved))
	}
	out, code := survivor.cli("cluster", "status")
	if code != 0 || !strings.Contains(out, victim) || !(strings.Contains(out, "failed") || strings.Contains(out, "suspect")) {
		t.Errorf("cluster status: exit %d, want %s failed or suspect:\n%s", code, victim, out)
	}
	sort.Strings(moved)
	t.Logf("kill -9 of %s (held %v): the last of its routes forwarded its first message from another member %s after the kill (each: %v; lease 2s, heartbeat 500ms, admin API polled every 20 ms); %d×%d sent, 0 lost, %d duplicates",
		victim, moved, takeover.Round(time.Millisecond), firstFwd, len(c.srcs), n, total)
}

// A member paused (SIGSTOP) past its lease: the other takes its routes
// over; woken (SIGCONT), the paused member forwards nothing more on them
// (its fence is closed) and lets them go within a heartbeat or two.
func TestClusterPausedMemberFenced(t *testing.T) {
	const n = 2000
	c := newClusterRig(t, []string{"pa", "pb"}, 4, 100)
	c.spread(4/2 + 1)
	c.send(0, n/2)
	paused := c.members["pa"]
	before := map[string]int64{} // pa's routes and their epochs
	brokertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		for _, st := range paused.routes() {
			if st.Holder == "pa" {
				before[st.ID] = st.Epoch
			}
		}
		if len(before) == 0 {
			return fmt.Errorf("pa holds nothing")
		}
		return nil
	})
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		h := held(t, map[string]*routerProc{"pb": c.members["pb"]})
		if len(h) != len(c.srcs) {
			return fmt.Errorf("pb holds %d of %d routes", len(h), len(c.srcs))
		}
		return nil
	})
	c.send(n/2, n)
	woke := time.Now()
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		// Nothing under its old leases; it may run routes again under new
		// ones (pb, over the quota, hands some back).
		for _, st := range paused.routes() {
			if old, ok := before[st.ID]; ok && st.Holder == "pa" && st.Epoch <= old {
				return fmt.Errorf("pa still runs %s under its old epoch %d (%s)", st.ID, st.Epoch, st.State)
			}
		}
		return nil
	})
	let := time.Since(woke)
	if strings.Contains(paused.out.String(), `"message":"route halted"`) == false {
		t.Errorf("pa's log says nothing of halting its routes")
	}
	dups := c.collect(n)
	t.Logf("SIGSTOP past the lease, SIGCONT: pa let its routes go %s after waking; %d×%d sent, 0 lost, duplicates per route %v",
		let.Round(time.Millisecond), len(c.srcs), n, dups)
	for i, d := range dups {
		if d > c.credit {
			t.Errorf("route %d: %d duplicates, more than its credit %d", i, d, c.credit)
		}
	}
}

// A member joins: the routes even out (planned handoffs: no loss, no
// duplicate); it leaves on SIGTERM: its routes move back, the same.
func TestClusterJoinAndLeaveHandOff(t *testing.T) {
	const n = 2000
	c := newClusterRig(t, []string{"ja", "jb"}, 6, 100)
	c.spread(6/2 + 1)
	c.send(0, n/3)
	joined := time.Now()
	c.join("jc")
	c.spread(6 / 3)
	balance := time.Since(joined)
	c.send(n/3, 2*n/3)
	left := time.Now()
	p := c.members["jc"]
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("jc after SIGTERM: %v", err)
	}
	delete(c.members, "jc")
	c.spread(6/2 + 1)
	moved := time.Since(left)
	c.send(2*n/3, n)
	dups := c.collect(n)
	t.Logf("join: even (2 each) %s after jc started; leave (SIGTERM): all held by the others %s after; %d×%d sent, 0 lost, duplicates per route %v",
		balance.Round(time.Millisecond), moved.Round(time.Millisecond), len(c.srcs), n, dups)
	for i, d := range dups {
		if d != 0 {
			t.Errorf("route %d: %d duplicates from planned handoffs; want 0", i, d)
		}
	}
}

// clusterLines keeps a member's log lines about the cluster and its routes.
func clusterLines(log string) string {
	var keep []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "cluster") || strings.Contains(l, "route") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// postgres runs testdata/postgres.sh verb (the test run's own server:
// the kill test is skipped for a store the script does not manage).
func postgres(t *testing.T, verb string) {
	t.Helper()
	if !strings.Contains(storetest.URL(t), "@127.0.0.1:55432/") {
		if os.Getenv("CI") != "" {
			t.Fatal("under CI, DATABASE_URL must be testdata/postgres.sh's server (make test starts it)")
		}
		t.Skip("DATABASE_URL is not testdata/postgres.sh's server: not killing it")
	}
	out, err := exec.Command("bash", "../../testdata/postgres.sh", verb).CombinedOutput()
	if err != nil {
		t.Fatalf("postgres.sh %s: %v\n%s", verb, err, out)
	}
}

// PostgreSQL killed with -9 under load and started again: the members
// keep forwarding on the routes they hold while it is down (the data plane
// does not die with the store), and when it is back their leases renew in
// place: no route moves, no epoch changes, nothing lost.
func TestClusterStoreKilledForwardingGoesOn(t *testing.T) {
	const n = 2000
	c := newClusterRig(t, []string{"sa", "sb"}, 4, 100)
	before := c.spread(4/2 + 1)
	c.send(0, n/2)
	postgres(t, "kill9")
	t.Cleanup(func() { postgres(t, "start") })
	c.send(n/2, n)
	// Past two leases (2s each) with the store down: still forwarding.
	deadline := time.Now().Add(5 * time.Second)
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		fwd := uint64(0)
		for id, p := range c.members {
			for _, st := range p.partialRoutes() { // the store is down: each lists its own
				if st.Holder == id && st.State == routes.StateOperational {
					fwd += st.Forwarded
				}
			}
		}
		if fwd < uint64(len(c.srcs)*n) || time.Now().Before(deadline) {
			return fmt.Errorf("forwarded %d of %d with the store down", fwd, len(c.srcs)*n)
		}
		return nil
	})
	postgres(t, "start")
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		after := held(t, c.members)
		for id, st := range before {
			a, ok := after[id]
			if !ok || a.Holder != st.Holder || a.Epoch != st.Epoch || a.State != routes.StateOperational {
				return fmt.Errorf("route %s: held by %s epoch %d before, now %+v", id, st.Holder, st.Epoch, a)
			}
		}
		return nil
	})
	// The route list answers from a member's own view while the store is
	// down, so the check above can pass before a member's first beat
	// after the restart: its log says when that beat came back.
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		for id, p := range c.members {
			if !strings.Contains(p.out.String(), "store reachable again") {
				return fmt.Errorf("member %s has not logged the store's return", id)
			}
		}
		return nil
	})
	dups := c.collect(n)
	t.Logf("PostgreSQL kill -9 under load, restarted after ~5s: %d×%d sent, 0 lost, duplicates per route %v; no route moved, no epoch changed", len(c.srcs), n, dups)
}

// Placement honours qpid-route's pull and push: pa is local to r1, pb to
// r2; pull routes r1 -> r2 run on pb (near their destination), push
// routes (-s) on pa (near their source).
func TestClusterPlacementPullAndPush(t *testing.T) {
	url := storetest.URL(t)
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	name := clusterName(t)
	members := map[string]*routerProc{
		"pa": clusterMember(t, "pa", name, url, bs, "500ms", "2s", "r1"),
		"pb": clusterMember(t, "pb", name, url, bs, "500ms", "2s", "r2"),
	}
	want := map[string]string{}
	for i, push := range []bool{false, true, false, true} {
		src, ex, dq := brokertest.UniqueName(t, fmt.Sprint("src", i)), brokertest.UniqueName(t, fmt.Sprint("ex", i)), brokertest.UniqueName(t, fmt.Sprint("dq", i))
		brokertest.DeclareQueue(t, bs[0].Config(), src)
		brokertest.DeclareExchangeQueue(t, bs[1].Config(), ex, "fanout", dq, "")
		args := []string{"queue", "add", "-d", "r2", "r1", ex, src}
		holder := "pb"
		if push {
			args, holder = []string{"queue", "add", "-d", "-s", "r2", "r1", ex, src}, "pa"
		}
		if out, code := members["pa"].cli(args...); code != 0 {
			t.Fatalf("queue add: exit %d: %s", code, out)
		}
		want[src] = holder
	}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		h := held(t, members)
		if len(h) != len(want) {
			return fmt.Errorf("%d of %d routes held", len(h), len(want))
		}
		for _, st := range h {
			if w := want[st.Spec.Queue]; st.Holder != w || st.State != routes.StateOperational {
				return fmt.Errorf("route %s (push %v) on %s (%s); want it Operational on %s", st.Spec, st.Spec.Push, st.Holder, st.State, w)
			}
		}
		return nil
	})
}

// partialRoutes is route list --json of a member whose store is (or is
// about to be found) down: the whole list (exit 0) until it finds out,
// then the routes it runs itself, with exit 1 and the list said partial
// (docs/cli.md).
func (p *routerProc) partialRoutes() []routes.Status {
	p.t.Helper()
	out, code := p.cli("route", "list", "--json")
	at := strings.Index(out, "[")
	if at < 0 || code != 0 && (code != 1 || !strings.Contains(out, "route list: ")) {
		p.t.Fatalf("route list with the store down: exit %d, want 0, or 1 with the list said partial:\n%s", code, out)
	}
	var sts []routes.Status
	if err := json.NewDecoder(strings.NewReader(out[at:])).Decode(&sts); err != nil {
		p.t.Fatalf("route list --json: %v\n%s", err, out)
	}
	return sts
}
