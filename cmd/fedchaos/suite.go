package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

// suite is one run of the fault suite: its brokers, proxies, router
// processes, publisher and consumer, and what the faults did.
type suite struct {
	opt      options
	log      *log.Logger
	run      string // unique per run: names the queues, the cluster and prefixes message ids
	dir      string // configuration, state file and router logs
	script   string // testdata/brokers.sh
	pgScript string // testdata/postgres.sh (store-kill)

	src, dst                 brokertest.Broker
	srcMgmt, dstMgmt         *amqp.RabbitManagement
	srcProxy, dstProxy       *brokertest.FaultProxy
	srcQueue, dstQueue       string
	auditQueue               string
	dstExchange              string
	pubConn, conConn         *amqp.Conn
	pub                      *publisher
	con                      *consumer
	workers                  sync.WaitGroup // publisher and consumer
	stopWorkers              context.CancelFunc
	fleet                    *fleet
	dstDown                  bool // the suite killed dst and has not restarted it yet
	storeDown                bool // the suite killed the store and has not restarted it yet
	declaredSrc, declaredDst bool

	chunk   int
	results []faultResult
	audit   counts // what the audit queue held at the end
	audited bool
	lastRt  routes.Status
	lastRun runRef // who ran the route at the end
	elapsed time.Duration
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "chaos-" + hex.EncodeToString(b)
}

// setup checks the brokers, declares the queues, starts the proxies, the
// router, the consumer and the publisher.
func (s *suite) setup(ctx context.Context) error {
	var err error
	if s.script, err = brokertest.Script(); err != nil {
		return err
	}
	s.pgScript = filepath.Join(filepath.Dir(s.script), "postgres.sh")
	if err := s.checkStore(ctx); err != nil {
		return err
	}
	reg, err := brokertest.Registered()
	if err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		out  *brokertest.Broker
	}{{s.opt.Src, &s.src}, {s.opt.Dst, &s.dst}} {
		br, ok := reg[b.name]
		if !ok || br.Kind != "rabbitmq" {
			return fmt.Errorf("%s is not a RabbitMQ broker of the harness (%s); start it: bash testdata/brokers.sh start -r 4", b.name, filepath.Join(brokertest.Dir(), "brokers.env"))
		}
		if !listening(br.Addr()) {
			return fmt.Errorf("%s does not answer on %s; start it: bash testdata/brokers.sh start -r 4", b.name, br.Addr())
		}
		*b.out = br
	}
	if err := s.declare(ctx); err != nil {
		return err
	}
	if s.srcProxy, err = brokertest.NewFaultProxy(s.src.Addr()); err != nil {
		return err
	}
	if s.dstProxy, err = brokertest.NewFaultProxy(s.dst.Addr()); err != nil {
		return err
	}
	if err := s.writeConfigs(); err != nil {
		return err
	}
	for _, m := range s.fleet.members {
		if err := s.fleet.start(ctx, m); err != nil {
			return err
		}
	}
	if err := s.waitFor(ctx, "the route to be Operational", time.Minute, func() (bool, string) {
		h, err := s.fleet.locate(ctx)
		if err != nil {
			return false, err.Error()
		}
		return h.st.State == routes.StateOperational, fmt.Sprintf("%s: state %s %s", h.m.id, h.st.State, h.st.LastError)
	}); err != nil {
		return err
	}
	return s.startWorkers(ctx)
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	_ = c.Close() // a probe: nothing was written
	return true
}

// declare creates the run's durable source queue on src, and on dst a
// durable fanout exchange bound to two durable queues: what survives a
// broker's kill -9 is exactly what is durable and confirmed.
//
// The consumer drains the first queue throughout the run. The second, the
// audit queue, is read only at the end, after the last fault: it holds
// one copy of every message the router got the destination to accept, so
// it counts the router's duplicates exactly. The consumer cannot: when the
// destination broker is killed it may also lose the record of accepts the
// consumer sent it, and deliver those messages to the consumer again.
// That is the broker's behaviour towards its own consumers, not the
// router's, and the audit queue is immune to it (no accept reaches it
// before the faults are over).
func (s *suite) declare(ctx context.Context) error {
	var err error
	if s.srcMgmt, err = amqp.NewRabbitManagement(s.src.Config()); err != nil {
		return err
	}
	if s.dstMgmt, err = amqp.NewRabbitManagement(s.dst.Config()); err != nil {
		return err
	}
	s.srcQueue, s.dstExchange, s.dstQueue, s.auditQueue = s.run+".src", s.run+".ex", s.run+".dst", s.run+".audit"
	if err := s.srcMgmt.DeclareQueue(ctx, s.srcQueue, amqp.QueueArgs{Durable: true}); err != nil {
		return fmt.Errorf("declare %s on %s: %w", s.srcQueue, s.src.Name, err)
	}
	s.declaredSrc = true
	s.declaredDst = true
	if err := s.dstMgmt.DeclareExchange(ctx, s.dstExchange, "fanout", true); err != nil {
		return fmt.Errorf("declare exchange %s on %s: %w", s.dstExchange, s.dst.Name, err)
	}
	for _, q := range []string{s.dstQueue, s.auditQueue} {
		if err := s.dstMgmt.DeclareQueue(ctx, q, amqp.QueueArgs{Durable: true}); err != nil {
			return fmt.Errorf("declare %s on %s: %w", q, s.dst.Name, err)
		}
		if err := s.dstMgmt.Bind(ctx, s.dstExchange, q, ""); err != nil {
			return fmt.Errorf("bind %s to %s on %s: %w", q, s.dstExchange, s.dst.Name, err)
		}
	}
	return nil
}

// writeConfigs writes the routers' configurations: their AMQP URLs are
// the proxies (the links the suite cuts), the management API goes
// direct. A single router keeps its route in a state file; cluster
// members (chaos-1..N) share it through the store, and each has the same
// route in its file (merged into the store by route id).
func (s *suite) writeConfigs() error {
	s.fleet = &fleet{bin: s.opt.Fedrouter, dir: s.dir, apiTimeout: 2 * time.Second, cluster: s.opt.Cluster > 0}
	if !s.fleet.cluster {
		m := &member{id: "chaos", logName: "router", config: filepath.Join(s.dir, "router.yaml")}
		s.fleet.members = []*member{m}
		return s.writeConfig(m, fmt.Sprintf("state_file: %q\n", filepath.Join(s.dir, "state.json")))
	}
	// The store URL goes to the members in their environment, not in the
	// files: the work directory is kept after a failure.
	s.fleet.env = []string{config.StoreURLEnv + "=" + s.opt.Store}
	// A route list asks the store first and answers from the member alone
	// after listStoreTimeout (2 s) when the store is down: wait longer.
	s.fleet.apiTimeout = 4 * time.Second
	for i := 1; i <= s.opt.Cluster; i++ {
		id := fmt.Sprintf("chaos-%d", i)
		m := &member{id: id, logName: id, config: filepath.Join(s.dir, id+".yaml")}
		s.fleet.members = append(s.fleet.members, m)
		tail := fmt.Sprintf("cluster: {name: %q, heartbeat: %s, lease: %s}\n", s.run, s.opt.Heartbeat, s.opt.Lease)
		if err := s.writeConfig(m, tail); err != nil {
			return err
		}
	}
	return nil
}

// freeListen is a free loopback address for a router's admin API: a
// configuration names its port (fedrouter refuses port 0). Another
// process could take it before the router listens; the router then fails
// to start and says so.
func freeListen() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// writeConfig writes m's configuration, with tail (its state file or its
// cluster section), and has fedrouter check it.
func (s *suite) writeConfig(m *member, tail string) error {
	admin, err := freeListen()
	if err != nil {
		return err
	}
	yaml := fmt.Sprintf(`# written by fedchaos for run %[1]s
router_id: %[10]s
brokers:
  - {name: src, url: "amqp://%[2]s", profile: rabbitmq, username: guest, password: guest, management: {url: %[3]q}}
  - {name: dst, url: "amqp://%[4]s", profile: rabbitmq, username: guest, password: guest, management: {url: %[5]q}}
reconnect: {min: 100ms, max: 2s, connect_timeout: 5s}
log: {level: info, format: json}
admin: {listen: %[11]q}
%[6]sroutes:
  - {kind: queue, src: src, dest: dst, exchange: %[7]q, queue: %[8]q, credit: %[9]d, durable: true}
`, s.run, s.srcProxy.Addr(), s.src.MgmtURL, s.dstProxy.Addr(), s.dst.MgmtURL,
		tail, s.dstExchange, s.srcQueue, s.opt.Credit, m.id, admin)
	if err := os.WriteFile(m.config, []byte(yaml), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(s.opt.Fedrouter, "check-config", m.config)
	cmd.Env = append(os.Environ(), s.fleet.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s check-config %s: %w\n%s", s.opt.Fedrouter, m.config, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startWorkers connects the publisher to src and the consumer to dst,
// directly: the proxies stand only between the router and the brokers.
// They run under ctx, the run's, until cleanup stops them.
func (s *suite) startWorkers(ctx context.Context) error {
	opts := amqp.ConnOptions{Backoff: amqp.Backoff{Min: 100 * time.Millisecond, Max: time.Second}, ConnectTimeout: 5 * time.Second}
	var err error
	opts.ContainerID = s.run + "-publisher"
	if s.pubConn, err = amqp.Dial(ctx, s.src.Config(), opts); err != nil {
		return err
	}
	opts.ContainerID = s.run + "-consumer"
	if s.conConn, err = amqp.Dial(ctx, s.dst.Config(), opts); err != nil {
		return err
	}
	s.pub = newPublisher(s.pubConn, "/amq/queue/"+s.srcQueue, s.run, s.opt.N, s.opt.PublishWindow)
	s.con = newConsumer(s.conConn, "/amq/queue/"+s.dstQueue, s.run, s.opt.N, s.opt.ConsumeWindow)
	ctx, cancel := context.WithCancel(ctx)
	s.stopWorkers = cancel
	s.workers.Add(2)
	go func() {
		defer s.workers.Done()
		if err := s.pub.run(ctx); err != nil && ctx.Err() == nil {
			s.log.Printf("publisher stopped: %v", err)
		}
	}()
	go func() {
		defer s.workers.Done()
		s.con.run(ctx)
	}()
	return nil
}

// stream runs the schedule: the stream is released a chunk at a time, one
// chunk more at every fault, so each fault hits a route with a backlog at
// the source and a full window in flight, and messages are published
// while the fault lasts.
func (s *suite) stream(ctx context.Context) error {
	plan := schedule(s.opt.Faults, s.opt.Rounds)
	s.chunk = max(1, s.opt.N/(len(plan)+1))
	s.pub.allow(s.chunk)
	if err := s.waitDistinct(ctx, "the stream to start", s.chunk/2, s.opt.FaultTimeout); err != nil {
		return err
	}
	for i, f := range plan {
		res := faultResult{scheduled: f, dupsAt: s.con.snapshot(false).Duplicates}
		s.pub.allow((i + 2) * s.chunk)
		s.log.Printf("fault %d/%d %s (round %d): injecting; %s", i+1, len(plan), f.Kind, f.Round, s.progressLine())
		res.Err = s.fault(ctx, &res)
		s.results = append(s.results, res)
		if res.Err != nil {
			return fmt.Errorf("fault %d %s: %w", i+1, f.Kind, res.Err)
		}
		s.log.Printf("fault %d/%d %s: outage %v, flow resumed %v after heal, %v after the fault%s%s", i+1, len(plan), f.Kind,
			res.outage().Round(time.Millisecond), res.recovery().Round(time.Millisecond), res.total().Round(time.Millisecond),
			s.holderNote(res), note(res.Note))
		for _, v := range res.Violations {
			s.log.Printf("fault %d/%d %s: FAILED: %s", i+1, len(plan), f.Kind, v)
		}
		// Let the route forward until one chunk is left at the source before
		// the next fault: the faults are spread over the stream, and each
		// one still hits a route with a full window in flight (a chunk is
		// larger than the credit).
		want := (i + 1) * s.chunk
		if err := s.waitDistinct(ctx, "progress after the fault", want, s.opt.FaultTimeout); err != nil {
			return fmt.Errorf("fault %d %s: %w", i+1, f.Kind, err)
		}
	}
	return nil
}

func note(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// drain ends the run. After a complete schedule it releases the rest of
// the stream and waits until every message arrived. In any case it then
// waits until nothing moves any more, so late duplicates count, and reads
// the audit queue, so that even a failed run reports exact counts.
func (s *suite) drain(ctx context.Context, scheduleDone bool) error {
	var errs []error
	if scheduleDone {
		s.pub.allow(s.opt.N)
		err := s.waitFor(ctx, "the source broker to accept every message", s.opt.DrainTimeout, func() (bool, string) {
			_, acked, _ := s.pub.progress()
			return acked == s.opt.N, fmt.Sprintf("%d of %d accepted", acked, s.opt.N)
		})
		if err == nil {
			err = s.waitDistinct(ctx, "every message to arrive", s.opt.N, s.opt.DrainTimeout)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.quiet(ctx); err != nil {
		return errors.Join(append(errs, err)...) // the audit queue may still grow: not read
	}
	if err := s.drainAudit(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// quiet waits until nothing is in flight at the router, both queues are
// empty and the consumer got nothing, for longer than RabbitMQ's
// management statistics interval (5 s), whose figures lag behind.
func (s *suite) quiet(ctx context.Context) error {
	const quiet = 6 * time.Second
	var since time.Time
	return s.waitFor(ctx, "the route to go quiet", time.Minute, func() (bool, string) {
		h, err := s.fleet.locate(ctx)
		if err != nil {
			since = time.Time{}
			return false, err.Error()
		}
		rt := h.st
		s.lastRt, s.lastRun = rt, h.run()
		sq, err1 := s.srcMgmt.Queue(ctx, s.srcQueue)
		dq, err2 := s.dstMgmt.Queue(ctx, s.dstQueue)
		if err := errors.Join(err1, err2); err != nil {
			since = time.Time{}
			return false, err.Error()
		}
		if rt.InFlight != 0 || sq.Messages != 0 || dq.Messages != 0 {
			since = time.Time{}
			return false, fmt.Sprintf("in flight %d, %s holds %d, %s holds %d", rt.InFlight, s.srcQueue, sq.Messages, s.dstQueue, dq.Messages)
		}
		if last := s.con.snapshot(false).LastAt; since.IsZero() || last.After(since) {
			since = time.Now()
		}
		return time.Since(since) >= quiet, "quiet for " + time.Since(since).Round(time.Second).String()
	})
}

// drainAudit reads the whole audit queue. The management API's count is
// exact here: nothing moved for longer than its statistics interval. A
// message beyond it would still be counted: reading stops only after a
// second without a delivery.
func (s *suite) drainAudit(ctx context.Context) error {
	info, err := s.dstMgmt.Queue(ctx, s.auditQueue)
	if err != nil {
		return fmt.Errorf("audit queue %s on %s: %w", s.auditQueue, s.dst.Name, err)
	}
	a := newConsumer(s.conConn, "/amq/queue/"+s.auditQueue, s.run, s.opt.N, 500)
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.run(actx)
	}()
	defer func() {
		cancel()
		wg.Wait()
		s.audit, s.audited = a.snapshot(true), true
	}()
	return s.waitFor(ctx, "the audit queue to drain", s.opt.DrainTimeout, func() (bool, string) {
		k := a.snapshot(false)
		idle := k.LastAt.IsZero() || time.Since(k.LastAt) >= time.Second
		return k.Total >= info.Messages && idle, fmt.Sprintf("read %d of %d", k.Total, info.Messages)
	})
}

// waitDistinct waits until the consumer has want distinct messages.
func (s *suite) waitDistinct(ctx context.Context, what string, want int, timeout time.Duration) error {
	return s.waitFor(ctx, what, timeout, func() (bool, string) {
		k := s.con.snapshot(false)
		return k.Distinct >= want, fmt.Sprintf("%d of %d distinct received; %s", k.Distinct, want, s.progressLine())
	})
}

func (s *suite) progressLine() string {
	sent, acked, _ := s.pub.progress()
	k := s.con.snapshot(false)
	return fmt.Sprintf("published %d (accepted %d), received %d (distinct %d)", sent, acked, k.Total, k.Distinct)
}

// waitFor polls f every 20 ms until it is true, the timeout passes or ctx
// ends; the error carries f's last words.
func (s *suite) waitFor(ctx context.Context, what string, timeout time.Duration, f func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, why := f()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %v for %s: %s", timeout, what, why)
		}
		if !pause(ctx, 20*time.Millisecond) {
			return fmt.Errorf("waiting for %s: %w (%s)", what, ctx.Err(), why)
		}
	}
}

// cleanup leaves the shared brokers and store as it found them: the
// destination and the store restarted if the suite killed them, every
// router stopped (a paused one continued first), the run's queues and
// exchange deleted. It runs on its own deadline, after ctx (the run's)
// may have ended: its values are kept, not its cancellation.
func (s *suite) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 4*time.Minute)
	defer cancel()
	s.restartKilled(ctx) // first: members leaving the cluster tell the store
	if s.fleet != nil {
		if err := s.fleet.stopAll(15 * time.Second); err != nil {
			s.log.Printf("cleanup: stopping the routers: %v", err)
		}
	}
	if s.stopWorkers != nil {
		s.stopWorkers()
		s.workers.Wait()
	}
	for _, c := range []*amqp.Conn{s.pubConn, s.conConn} {
		if c != nil {
			_ = c.Close() // always nil
		}
	}
	for _, p := range []*brokertest.FaultProxy{s.srcProxy, s.dstProxy} {
		if p != nil {
			if err := p.Close(); err != nil {
				s.log.Printf("cleanup: fault proxy: %v", err)
			}
		}
	}
	if s.declaredSrc {
		if err := s.srcMgmt.DeleteQueue(ctx, s.srcQueue); err != nil {
			s.log.Printf("cleanup: delete %s on %s: %v", s.srcQueue, s.src.Name, err)
		}
	}
	if s.declaredDst {
		if err := errors.Join(s.dstMgmt.DeleteQueue(ctx, s.dstQueue), s.dstMgmt.DeleteQueue(ctx, s.auditQueue),
			s.dstMgmt.DeleteExchange(ctx, s.dstExchange)); err != nil {
			s.log.Printf("cleanup: delete %s, %s and %s on %s: %v", s.dstQueue, s.auditQueue, s.dstExchange, s.dst.Name, err)
		}
	}
	for _, m := range []*amqp.RabbitManagement{s.srcMgmt, s.dstMgmt} {
		if m != nil {
			m.Close()
		}
	}
}

// restartKilled restarts the destination broker and the store if the
// suite killed them and has not restarted them yet (a run interrupted in
// the middle of a fault).
func (s *suite) restartKilled(ctx context.Context) {
	if s.dstDown {
		s.log.Printf("restarting %s, which the suite killed", s.dst.Name)
		if err := harness(ctx, s.script, "restart", s.dst.Name); err != nil {
			s.log.Printf("cleanup: %v", err)
		} else {
			s.dstDown = false
		}
	}
	if s.storeDown {
		s.log.Printf("restarting PostgreSQL, which the suite killed")
		if err := harness(ctx, s.pgScript, "restart"); err != nil {
			s.log.Printf("cleanup: %v", err)
		} else {
			s.storeDown = false
		}
	}
}
