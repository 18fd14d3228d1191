package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/routes"
)

// conns is how many connections per broker the raw pipe and fedrouter
// hold in a run: --conns, or one per route (each shovel has its own).
func (b *bench) conns(o runObjs) int {
	if b.opt.Conns > 0 {
		return b.opt.Conns
	}
	return max(1, len(o.srcQ))
}

// runRaw runs the raw pipe as a child process (fedbench pipe); timed from
// "go" to "done", the CPU of the pipe process over the same interval.
func (b *bench) runRaw(ctx context.Context, o runObjs, s *sample) error {
	args := []string{"pipe", "--src-url", o.pair.Src.URL, "--dst-url", o.pair.Dst.URL,
		"--n", strconv.Itoa(o.per), "--credit", strconv.Itoa(b.opt.Credit), "--conns", strconv.Itoa(b.conns(o))}
	for k := range o.srcQ {
		args = append(args, "--link", queueAddr(o.pair.Src, o.srcQ[k])+">"+exchangeAddr(o.pair.Dst, o.dstX[k]))
	}
	if b.opt.PipeProf != "" {
		args = append(args, "--cpuprofile", b.opt.PipeProf)
	}
	p, err := startPipe(b.self, args)
	if err != nil {
		return err
	}
	if err := p.expect(ctx, "ready", 30*time.Second); err != nil {
		return p.fail(err)
	}
	meter, err := startCPU(append([]int{p.pid()}, b.brokerPIDs(o.pair)...)...)
	if err != nil {
		return p.fail(err)
	}
	t0 := time.Now()
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		return p.fail(err)
	}
	if err := p.expect(ctx, "done", b.timeout(o.per*len(o.srcQ))); err != nil {
		return p.fail(err)
	}
	s.Seconds = time.Since(t0).Seconds()
	cpu, err := meter.stop()
	if err != nil {
		return p.fail(err)
	}
	_, hwm, err := memKiB(p.pid())
	if err != nil {
		return p.fail(err)
	}
	s.ProcCPU, s.BrokerCPU, s.PeakRSS = cpu[0], cpu[1]+cpu[2], hwm
	if err := p.finish(); err != nil {
		return fmt.Errorf("raw pipe exit: %w: %s", err, p.stderrText())
	}
	return nil
}

// pipeProc is a running `fedbench pipe` child.
type pipeProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its stdout, line by line; closed at EOF
	stderr strings.Builder
}

func startPipe(self string, args []string) (*pipeProc, error) {
	p := &pipeProc{cmd: exec.Command(self, args...), lines: make(chan string)}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the raw pipe: %w", err)
	}
	go func() { // owned: ends at EOF, when the pipe exits; finish drains it
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p, nil
}

func (p *pipeProc) pid() int { return p.cmd.Process.Pid }

// expect waits for a line starting with word.
func (p *pipeProc) expect(ctx context.Context, word string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return fmt.Errorf("exited before %q", word)
			}
			if strings.HasPrefix(l, word) {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("no %q within %s", word, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// finish closes the pipe's stdin (it exits at EOF), kills it if it has not
// exited after 15 s, and waits for it.
func (p *pipeProc) finish() error {
	_ = p.stdin.Close() // the EOF it exits at; if it does not, the kill below ends it
	exited := make(chan struct{})
	go func() { // owned: ends when lines closes, which the exit ensures
		for range p.lines {
		}
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-exited
	}
	return p.cmd.Wait()
}

// fail kills the pipe and returns err with what it wrote to stderr.
func (p *pipeProc) fail(err error) error {
	_ = p.cmd.Process.Kill()
	_ = p.finish()
	return fmt.Errorf("raw pipe: %w: %s", err, p.stderrText())
}

// stderrText is safe once finish returned (Wait has copied everything).
func (p *pipeProc) stderrText() string { return strings.TrimSpace(p.stderr.String()) }

// runFedrouter starts a router with both brokers on data_path engine,
// adds the routes (with ack, when not 0) through the admin API and polls
// their forwarded counters; timed from the first add to the poll that
// sees every message forwarded (accepted by the destination and settled
// at the source).
func (b *bench) runFedrouter(ctx context.Context, o runObjs, ack int, s *sample) error {
	dir, err := os.MkdirTemp(b.opt.Tmp, "fedbench-router-")
	if err != nil {
		return err
	}
	rp, err := startRouterSpec(ctx, b.opt.Fedrouter, dir, routerSpec{Conns: b.conns(o), DataPath: routes.DataPathEngine,
		Brokers: []broker{o.pair.Src, o.pair.Dst}})
	if err != nil {
		return err
	}
	defer rp.stop()
	meter, err := startCPU(append([]int{rp.pid()}, b.brokerPIDs(o.pair)...)...)
	if err != nil {
		return err
	}
	t0 := time.Now()
	ids, err := b.addQueueRoutes(ctx, rp, o, o.pair.Src.Name, o.pair.Dst.Name, ack)
	if err != nil {
		return err
	}
	want := uint64(o.per * len(o.srcQ))
	var last []routes.Status
	err = poll(ctx, b.opt.Poll, b.timeout(int(want)), func() (bool, error) {
		var n uint64
		var err error
		last, err = rp.statuses(ctx, ids)
		for _, st := range last {
			n += st.Forwarded
		}
		return n >= want, err
	})
	if err != nil {
		return fmt.Errorf("fedrouter (log %s): %w", rp.log, err)
	}
	s.Seconds = time.Since(t0).Seconds()
	if err := checkOnEngine(last); err != nil {
		return notRetried(fmt.Errorf("fedrouter (log %s): %w", rp.log, err))
	}
	return finishRouterRun(rp, meter, dir, s)
}

// engineDetail is in the detail of a route forwarding on the engine
// (route list; routes/enginerun.go).
const engineDetail = "engine data path"

// checkOnEngine says whether every route of sts forwarded on the engine,
// as route list's detail says. The engine is the only data path: a route
// whose detail does not say so is a router defect (or a router from
// before the engine carried every route), and its figures are not the
// engine's.
func checkOnEngine(sts []routes.Status) error {
	for _, st := range sts {
		if !strings.Contains(st.Detail, engineDetail) {
			return fmt.Errorf("route %s is not on the engine data path (detail %q)", st.ID, st.Detail)
		}
	}
	return nil
}

// addQueueRoutes adds the run's queue routes (source queue k to
// destination exchange k) on rp, from broker src to broker dest as the
// router names them, each with ack (0: none), and returns their IDs.
func (b *bench) addQueueRoutes(ctx context.Context, rp *routerProc, o runObjs, src, dest string, ack int) (map[string]bool, error) {
	ids := map[string]bool{}
	for k := range o.srcQ {
		id, err := rp.addRoute(ctx, routes.Spec{Kind: routes.KindQueue, Src: src, Dest: dest,
			Exchange: o.dstX[k], Queue: o.srcQ[k], Credit: b.opt.Credit, Ack: ack})
		if err != nil {
			return nil, err
		}
		ids[id] = true
	}
	return ids, nil
}

// fanoutQueue is the shared queue fedrouter consumes for an exchange
// route on exchange x with no key, fanning out (routes/fanout.go).
func fanoutQueue(x string) string {
	return routes.FanoutPrefix + x + "." + routes.ExchangeEdge{Exchange: x}.Group()
}

// runFanout runs fedrouter with flooding on and one exchange route per
// source exchange: each fans out at the source — the router is attached
// to the destination, so its copies go straight there (through the
// source's transit queue only while that connection is down). A fan-out
// route starts once the link-state table has had its grace (3 s here):
// timed from when every route is Operational until every message is
// settled at the source and every copy sent through transit delivered,
// the rate counting only what was delivered in that time.
func (b *bench) runFanout(ctx context.Context, o runObjs, s *sample) error {
	dir, err := os.MkdirTemp(b.opt.Tmp, "fedbench-router-")
	if err != nil {
		return err
	}
	// The run's own control node: not the default one other routers on
	// these nodes may use (transit.go).
	rp, err := startRouterSpec(ctx, b.opt.Fedrouter, dir, routerSpec{Conns: b.conns(o), Flooding: true, DataPath: routes.DataPathEngine,
		Control: b.transitControl(), Brokers: []broker{o.pair.Src, o.pair.Dst}})
	if err != nil {
		return err
	}
	defer rp.stop()
	ids := map[string]bool{}
	for k := range o.srcX {
		id, err := rp.addRoute(ctx, routes.Spec{Kind: routes.KindExchange, Src: o.pair.Src.Name, Dest: o.pair.Dst.Name,
			Exchange: o.srcX[k], Credit: b.opt.Credit})
		if err != nil {
			return err
		}
		ids[id] = true
	}
	if err := poll(ctx, b.opt.Poll, time.Minute, func() (bool, error) { return rp.routesOperational(ctx, ids) }); err != nil {
		return fmt.Errorf("fedrouter fan-out routes (log %s): %w", rp.log, err)
	}
	meter, err := startCPU(append([]int{rp.pid()}, b.brokerPIDs(o.pair)...)...)
	if err != nil {
		return err
	}
	t0 := time.Now()
	n0, _, err := rp.routeCounts(ctx, ids)
	if err != nil {
		return err
	}
	want := uint64(o.per * len(o.srcQ))
	err = poll(ctx, b.opt.Poll, b.timeout(int(want)), func() (bool, error) {
		n, viaTransit, err := rp.routeCounts(ctx, ids)
		if err != nil || n < want {
			return false, err
		}
		delivered, err := rp.transitDelivered(ctx, o.pair.Dst.Name)
		return delivered >= viaTransit, err
	})
	if err != nil {
		return fmt.Errorf("fedrouter fan-out (log %s): %w", rp.log, err)
	}
	s.Seconds = time.Since(t0).Seconds() * float64(want) / float64(want-min(n0, want-1))
	return finishRouterRun(rp, meter, dir, s)
}

// finishRouterRun records a timed router run's CPU (router, then the two
// brokers) and peak memory, stops the router and removes its directory.
func finishRouterRun(rp *routerProc, meter *cpuMeter, dir string, s *sample) error {
	cpu, err := meter.stop()
	if err != nil {
		return err
	}
	_, hwm, err := memKiB(rp.pid())
	if err != nil {
		return err
	}
	s.ProcCPU, s.BrokerCPU, s.PeakRSS = cpu[0], cpu[1]+cpu[2], hwm
	rp.stop()
	return os.RemoveAll(dir)
}

// runShovel defines one dynamic shovel per route on the source node, each
// deleting itself once it has moved its share (src-delete-after; with
// ack-mode on-confirm the count is of messages confirmed by the
// destination and acknowledged at the source). Timed from the first
// definition until every shovel is gone. The shovel runs inside RabbitMQ:
// its CPU is part of the brokers'.
func (b *bench) runShovel(ctx context.Context, o runObjs, amqp10 bool, s *sample) error {
	m := o.pair.Src.mgmt
	meter, err := startCPU(b.brokerPIDs(o.pair)...)
	if err != nil {
		return err
	}
	t0 := time.Now()
	left := map[string]bool{}
	for k := range o.srcQ {
		def := map[string]any{
			"src-uri": "amqp://guest:guest@" + o.pair.Src.hostPort(), "dest-uri": "amqp://guest:guest@" + o.pair.Dst.hostPort(),
			"ack-mode": "on-confirm", "src-prefetch-count": b.opt.Credit, "src-delete-after": o.per,
		}
		if amqp10 {
			def["src-protocol"], def["src-address"] = "amqp10", queueAddr(o.pair.Src, o.srcQ[k])
			def["dest-protocol"], def["dest-address"] = "amqp10", exchangeAddr(o.pair.Dst, o.dstX[k])
		} else {
			def["src-protocol"], def["src-queue"] = "amqp091", o.srcQ[k]
			def["dest-protocol"], def["dest-exchange"] = "amqp091", o.dstX[k]
		}
		if err := m.PutShovel(ctx, o.shovs[k], def); err != nil {
			return err
		}
		left[o.shovs[k]] = true
	}
	polls := 0
	var failingSince time.Time
	err = poll(ctx, b.opt.Poll, b.timeout(o.per*len(o.srcQ)), func() (bool, error) {
		for name := range left {
			ok, err := m.ShovelExists(ctx, name)
			if err != nil {
				// Seen: a 500 while the shovel deletes its own parameter.
				// Ask again; give up only if it persists.
				if failingSince.IsZero() {
					failingSince = time.Now()
				}
				if time.Since(failingSince) > 5*time.Second {
					return false, err
				}
				return false, nil
			}
			failingSince = time.Time{}
			if !ok {
				delete(left, name)
			}
		}
		if polls++; polls%25 == 0 && len(left) > 0 { // a shovel that cannot work says so here
			sts, err := m.Shovels(ctx)
			if err != nil {
				return false, err
			}
			for _, st := range sts {
				if left[st.Name] && st.State == "terminated" {
					return false, fmt.Errorf("shovel %s terminated: %s", st.Name, st.Reason)
				}
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return err
	}
	s.Seconds = time.Since(t0).Seconds()
	cpu, err := meter.stop()
	if err != nil {
		return err
	}
	s.BrokerCPU = cpu[0] + cpu[1]
	return nil
}
