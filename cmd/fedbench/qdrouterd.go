package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// vQdrouterd is Apache Qpid Dispatch Router 1.19 (qdrouterd), the
// reference AMQP 1.0 router, moving the same messages between the same
// brokers as vEngine: a router process of its own with one worker
// thread (one core, as fedrouter is measured), a connector per broker
// connection (linkCapacity = the run's credit) and per route two
// auto-links on one address, phase 0, `in` from the source queue and
// `out` to the destination exchange. Settlement is end to end: the
// source is settled once the destination has settled.
//
// The binary is not in the repository: the shared build
// (shared/peers/qdrouterd, its README) is found as testdata/qpidd.sh
// finds qpidd; without it the variant is left out of the default
// variants, with a line saying so.
const vQdrouterd = "Qpid Dispatch"

// qdrouterdFallback is this workplace's copy of the shared build: the
// last place looked in.
const qdrouterdFallback = "/work/shared/peers/qdrouterd"

// errNoQdrouterd is the shared qdrouterd build missing.
var errNoQdrouterd = errors.New("fedbench: no shared qdrouterd build found (set FEDROUTER_QDROUTERD_DIR, or put it at ../shared/peers/qdrouterd beside the clone)")

// qdrouterdDir finds the shared build: $FEDROUTER_QDROUTERD_DIR if set
// (then it must hold bin/qdrouterd: a wrong setting is an error, not a
// missing peer), else ../shared/peers/qdrouterd beside the clone at root,
// else ../../shared/peers/qdrouterd, else qdrouterdFallback. isExec says
// whether a path is an executable file.
func qdrouterdDir(env, root string, isExec func(string) bool) (string, error) {
	if env != "" {
		if isExec(filepath.Join(env, "bin", "qdrouterd")) {
			return env, nil
		}
		return "", fmt.Errorf("fedbench: FEDROUTER_QDROUTERD_DIR=%s holds no executable bin/qdrouterd", env)
	}
	for _, d := range []string{
		filepath.Join(root, "..", "shared", "peers", "qdrouterd"),
		filepath.Join(root, "..", "..", "shared", "peers", "qdrouterd"),
		qdrouterdFallback,
	} {
		if isExec(filepath.Join(d, "bin", "qdrouterd")) {
			return filepath.Clean(d), nil
		}
	}
	return "", errNoQdrouterd
}

func isExecFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// findQdrouterd looks for the shared build from the current directory
// (fedbench runs from the repository's root).
func findQdrouterd() (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return qdrouterdDir(os.Getenv("FEDROUTER_QDROUTERD_DIR"), root, isExecFile)
}

// defaultVariants drops vQdrouterd from the default variants when the
// shared build is absent (with the line that says so); asked for
// explicitly, a missing build is an error at once rather than a failed
// case per pair and size.
func defaultVariants(variants []string, explicit bool, avail error) ([]string, string, error) {
	if avail == nil {
		return variants, "", nil
	}
	var out []string
	for _, v := range variants {
		if v != vQdrouterd {
			out = append(out, v)
		}
	}
	if len(out) == len(variants) {
		return variants, "", nil
	}
	if explicit || !errors.Is(avail, errNoQdrouterd) {
		return nil, "", fmt.Errorf("--variant qdrouterd: %w", avail)
	}
	return out, "qdrouterd: " + avail.Error() + ": the Qpid Dispatch variant is skipped", nil
}

// qdrConnector is one connector of a bench qdrouterd: a connection to a
// broker.
type qdrConnector struct {
	Name     string
	Broker   broker
	Capacity int // linkCapacity: the credit the router gives a link from the broker
}

// qdrSpec is what a bench qdrouterd's configuration holds.
type qdrSpec struct {
	Port       int    // its listener on 127.0.0.1, for management
	Log        string // its log file
	Connectors []qdrConnector
}

// qdrConfig is the configuration file of a bench qdrouterd: standalone,
// one worker thread, an anonymous listener for fedbench's management
// requests, warnings and worse to Log, and the connectors. The auto-links
// are created through management when the run's clock starts (as
// fedrouter's routes are added through its API).
func qdrConfig(s qdrSpec) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "router {\n    mode: standalone\n    id: fedbench\n    workerThreads: 1\n}\n")
	fmt.Fprintf(&b, "listener {\n    host: 127.0.0.1\n    port: %d\n    role: normal\n    authenticatePeer: no\n    saslMechanisms: ANONYMOUS\n}\n", s.Port)
	fmt.Fprintf(&b, "log {\n    module: DEFAULT\n    enable: warning+\n    outputFile: %s\n}\n", s.Log)
	for _, c := range s.Connectors {
		host, port, err := net.SplitHostPort(c.Broker.hostPort())
		if err != nil {
			return "", fmt.Errorf("connector %s to %s (%s): %w", c.Name, c.Broker.Name, c.Broker.URL, err)
		}
		fmt.Fprintf(&b, "connector {\n    name: %s\n    host: %s\n    port: %s\n    role: route-container\n    linkCapacity: %d\n", c.Name, host, port, c.Capacity)
		if c.Broker.Kind == "rabbitmq" { // the others offer ANONYMOUS
			fmt.Fprintf(&b, "    saslMechanisms: PLAIN\n    saslUsername: guest\n    saslPassword: pass:guest\n")
		} else {
			fmt.Fprintf(&b, "    saslMechanisms: ANONYMOUS\n")
		}
		fmt.Fprintf(&b, "}\n")
	}
	return b.String(), nil
}

// qdrAutoLink is one auto-link to create.
type qdrAutoLink struct {
	Name     string // the management entity's name
	Address  string // the router address both links of a route share
	Conn     string // connector name
	Dir      string // "in" (from the broker) or "out" (to it)
	External string // the node at the broker
}

// attrs are the auto-link's CREATE attributes. Both links of a route are
// on phase 0: with the defaults (1 for in, 0 for out) they would sit on
// different addresses and nothing would move (the README's finding).
func (a qdrAutoLink) attrs() map[string]any {
	return map[string]any{"address": a.Address, "connection": a.Conn, "direction": a.Dir,
		"phase": int64(0), "externalAddress": a.External}
}

// qdrAutoLinks are a run's auto-links: per route k an address (the run's
// name for route k, o.shovs[k]), an out-link to the destination exchange
// and an in-link from the source queue, over connector pair k mod conns.
// The out-links are to be created first: an in-link gets credit only once
// its address has a destination.
func qdrAutoLinks(o runObjs, conns int) (outs, ins []qdrAutoLink) {
	for k := range o.srcQ {
		addr := o.shovs[k]
		c := k % max(1, conns)
		outs = append(outs, qdrAutoLink{Name: addr + ".out", Address: addr, Conn: fmt.Sprintf("dst%d", c), Dir: "out",
			External: exchangeAddr(o.pair.Dst, o.dstX[k])})
		ins = append(ins, qdrAutoLink{Name: addr + ".in", Address: addr, Conn: fmt.Sprintf("src%d", c), Dir: "in",
			External: queueAddr(o.pair.Src, o.srcQ[k])})
	}
	return outs, ins
}

// qdrConnectors are conns connectors to each broker of the pair: src0..,
// dst0...
func qdrConnectors(p pairDef, conns, credit int) []qdrConnector {
	var cs []qdrConnector
	for c := 0; c < conns; c++ {
		cs = append(cs, qdrConnector{Name: fmt.Sprintf("src%d", c), Broker: p.Src, Capacity: credit},
			qdrConnector{Name: fmt.Sprintf("dst%d", c), Broker: p.Dst, Capacity: credit})
	}
	return cs
}

// qdrProc is a qdrouterd process started for one run, its configuration
// and logs in dir.
type qdrProc struct {
	cmd  *exec.Cmd
	dir  string
	port int
	log  string        // its log section's file
	out  string        // its stdout+stderr
	done chan struct{} // closed once it has exited
	err  error         // cmd.Wait's result; read after done
}

// startQdrouterd writes the configuration into dir, starts the router
// and waits until its listener accepts connections.
func startQdrouterd(ctx context.Context, home, dir string, conns []qdrConnector) (*qdrProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	q := &qdrProc{dir: dir, port: port, log: filepath.Join(dir, "qdrouterd.log"), out: filepath.Join(dir, "stdout.log"), done: make(chan struct{})}
	conf, err := qdrConfig(qdrSpec{Port: port, Log: q.log, Connectors: conns})
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "qdrouterd.conf")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	outf, err := os.Create(q.out)
	if err != nil {
		return nil, err
	}
	defer func() { _ = outf.Close() }() // the child holds its own descriptor
	q.cmd = exec.Command(filepath.Join(home, "bin", "qdrouterd"), "-I", filepath.Join(home, "python"), "-c", cfg)
	q.cmd.Env = append(os.Environ(), "QPID_DISPATCH_HOME="+home)
	q.cmd.Stdout, q.cmd.Stderr = outf, outf
	if err := q.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start qdrouterd: %w", err)
	}
	go func() { // owned: ends when the process exits; stop waits for it
		q.err = q.cmd.Wait()
		close(q.done)
	}()
	if err := q.waitListening(ctx, 30*time.Second); err != nil {
		q.stop()
		return nil, err
	}
	return q, nil
}

func (q *qdrProc) pid() int { return q.cmd.Process.Pid }

func (q *qdrProc) addr() string { return "127.0.0.1:" + strconv.Itoa(q.port) }

func (q *qdrProc) waitListening(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if c, err := net.DialTimeout("tcp", q.addr(), time.Second); err == nil {
			_ = c.Close() // only whether it listens was asked
			return nil
		}
		select {
		case <-q.done:
			return fmt.Errorf("qdrouterd exited before it listened (%v): %s", q.err, q.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("qdrouterd not listening on %s after %s: %s", q.addr(), timeout, q.logTail())
		}
	}
}

// logTail is the end of its stdout and its log, for an error.
func (q *qdrProc) logTail() string {
	var parts []string
	for _, p := range []string{q.out, q.log} {
		b, _ := os.ReadFile(p)
		if len(b) > 1500 {
			b = b[len(b)-1500:]
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " | ")
}

// stop ends the router with SIGTERM, or SIGKILL if it has not exited
// after 10 s, and waits.
func (q *qdrProc) stop() {
	_ = q.cmd.Process.Signal(syscall.SIGTERM) // already gone: done is closed
	select {
	case <-q.done:
	case <-time.After(10 * time.Second):
		_ = q.cmd.Process.Kill()
		<-q.done
	}
}

// runQdrouterd starts a qdrouterd with connectors to both brokers and
// waits until they are connected (not timed, as fedrouter's connections
// are up before its clock), then creates the auto-links through
// management; timed from the first creation until the 20 ms poll of its
// links (one management QUERY) sees every message settled at the source
// after the destination accepted it. CPU: the router process (and the two
// brokers), as fedrouter's. Its configuration and log are removed after a
// good run and kept after a failed one.
func (b *bench) runQdrouterd(ctx context.Context, o runObjs, s *sample) (err error) {
	home, err := findQdrouterd()
	if err != nil {
		return notRetried(err)
	}
	dir, err := os.MkdirTemp(b.opt.Tmp, "fedbench-qdrouterd-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (qdrouterd's configuration and log kept in %s)", err, dir)
			return
		}
		err = os.RemoveAll(dir)
	}()
	conns := b.conns(o)
	q, err := startQdrouterd(ctx, home, dir, qdrConnectors(o.pair, conns, b.opt.Credit))
	if err != nil {
		return err
	}
	defer q.stop()
	m, err := dialQdrMgmt(ctx, q.addr())
	if err != nil {
		return err
	}
	defer m.close()
	var down []string
	err = poll(ctx, b.opt.Poll, 30*time.Second, func() (bool, error) {
		rows, err := m.query(ctx, qdrTypeConnector, "name", "connectionStatus", "connectionMsg")
		down = connectorsDown(rows)
		return err == nil && len(rows) == 2*conns && len(down) == 0, err
	})
	if err != nil {
		return fmt.Errorf("qdrouterd connectors %v: %w", down, err)
	}
	return b.timeQdrouterd(ctx, o, q, m, conns, s)
}

// timeQdrouterd is runQdrouterd's timed part.
func (b *bench) timeQdrouterd(ctx context.Context, o runObjs, q *qdrProc, m *qdrMgmt, conns int, s *sample) (err error) {
	meter, err := startCPU(append([]int{q.pid()}, b.brokerPIDs(o.pair)...)...)
	if err != nil {
		return err
	}
	outs, ins := qdrAutoLinks(o, conns)
	addrs := map[string]bool{}
	t0 := time.Now()
	for _, a := range append(outs, ins...) {
		addrs[a.Address] = true
		if err := m.create(ctx, qdrTypeAutoLink, a.Name, a.attrs()); err != nil {
			return err
		}
	}
	want := int64(o.per * len(o.srcQ))
	var c qdrCounts
	polls := 0
	err = poll(ctx, b.opt.Poll, b.timeout(int(want)), func() (bool, error) {
		links, err := m.query(ctx, qdrTypeLink, qdrLinkAttrs...)
		if err != nil {
			return false, err
		}
		if c = countLinks(links, addrs); c.settled >= want && c.unsettled == 0 {
			return true, nil
		}
		if polls++; polls%25 == 0 { // an attach the broker refused says so here
			als, err := m.query(ctx, qdrTypeAutoLink, "address", "direction", "operStatus", "lastError")
			if f := autoLinksFailed(als, addrs); err == nil && len(f) > 0 {
				return false, fmt.Errorf("auto-links failed: %s", strings.Join(f, "; "))
			}
			return false, err
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("qdrouterd (%d of %d settled at the source, %d pending): %w: %s", c.settled, want, c.unsettled, err, q.logTail())
	}
	if c.dropped > 0 { // what the check after the run would find missing, with its cause
		return notRetried(fmt.Errorf("qdrouterd dropped %d of %d pre-settled deliveries (the source sends pre-settled: best-effort to Qpid Dispatch)", c.dropped, want))
	}
	s.Seconds = time.Since(t0).Seconds()
	defer func() { // after the figures: the in-links detached before the router stops
		if err == nil {
			err = detachIns(ctx, m, ins, addrs)
		}
	}()
	cpu, err := meter.stop()
	if err != nil {
		return err
	}
	_, hwm, err := memKiB(q.pid())
	if err != nil {
		return err
	}
	s.ProcCPU, s.BrokerCPU, s.PeakRSS = cpu[0], cpu[1]+cpu[2], hwm
	return nil
}

// qdrouterdAvailable is nil when the shared build is found and its binary
// runs (its libraries are installed).
func qdrouterdAvailable() error {
	_, err := qdrouterdVersionErr()
	return err
}

// qdrouterdVersion is what the shared build says of itself ("" if it
// cannot be asked).
func qdrouterdVersion() string {
	v, _ := qdrouterdVersionErr()
	return v
}

func qdrouterdVersionErr() (string, error) {
	home, err := findQdrouterd()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(home, "bin", "qdrouterd"), "--version")
	cmd.Env = append(os.Environ(), "QPID_DISPATCH_HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s/bin/qdrouterd --version: %w: %s (its Debian packages: %s/qdrouterd.sh deps)", home, err, strings.TrimSpace(string(out)), home)
	}
	return strings.TrimSpace(string(out)), nil
}

// qdrLinkAttrs are the router.link attributes countLinks reads.
var qdrLinkAttrs = []string{"linkDir", "owningAddr", "acceptedCount", "presettledCount", "unsettledCount", "droppedPresettledCount"}

// detachIns deletes the run's in auto-links and waits until their links
// are gone (the broker answered the detach, so it has processed every
// disposition sent before it): stopping the router with a disposition
// still on its way would leave the message at the source, to be counted
// there by the check after the run.
func detachIns(ctx context.Context, m *qdrMgmt, ins []qdrAutoLink, addrs map[string]bool) error {
	for _, a := range ins {
		if err := m.remove(ctx, qdrTypeAutoLink, a.Name); err != nil {
			return err
		}
	}
	var left int
	err := poll(ctx, 20*time.Millisecond, 30*time.Second, func() (bool, error) {
		links, err := m.query(ctx, qdrTypeLink, qdrLinkAttrs...)
		left = countLinks(links, addrs).ins
		return err == nil && left == 0, err
	})
	if err != nil {
		return fmt.Errorf("qdrouterd: detaching the in-links (%d left): %w", left, err)
	}
	return nil
}
