package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/routes"
)

// routerProc is a fedrouter process started for one run: its own config,
// state file and log in a temporary directory, admin API on a free port.
type routerProc struct {
	cmd   *exec.Cmd
	dir   string
	api   *adminclient.Client // its admin API on 127.0.0.1:PORT
	token string              // its admin token
	cfg   string              // its configuration file
	log   string              // path of its stdout+stderr
	done  chan struct{}       // closed once the process has exited
	err   error               // cmd.Wait's result; read after done
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the router listens; the router then fails to start and
// says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }() // only its port was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}

// benchSecret turns link-state flooding on for the fan-out variant (one
// router: it floods to itself and computes its paths) and the transit
// variant (two routers).
const benchSecret = "fedbench-network-secret-0123456789"

// newToken is a router's admin token for one run: random, so a process of
// another run on this host cannot call it.
func newToken() string {
	return rand.Text() // 26 base32 characters, 130 bits
}

// routerSpec is what a bench router's configuration holds besides its
// admin API and state file.
type routerSpec struct {
	ID       string      // router_id; "fedbench" when empty
	Conns    int         // brokers[].connections
	Flooding bool        // link-state flooding on (benchSecret)
	Control  string      // topology.control_address; the default when empty
	Links    [][2]string // links[].between, by the names in Brokers
	Brokers  []broker    // as named in the configuration: Name is the router's name for it
	DataPath string      // data_path (routes.DataPath*); the router's default when empty
}

func routerConfig(dir, token string, port int, rs routerSpec) string {
	var b strings.Builder
	id := cmp.Or(rs.ID, "fedbench")
	fmt.Fprintf(&b, "router_id: %s\nbrokers:\n", id)
	for _, br := range rs.Brokers {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n    profile: %s\n    connections: %d\n", br.Name, br.URL, br.profile(), rs.Conns)
		if br.Kind == "rabbitmq" { // the Proton brokers offer only ANONYMOUS
			fmt.Fprintf(&b, "    username: guest\n    password: guest\n")
		}
		if br.Mgmt != "" {
			fmt.Fprintf(&b, "    management: {url: %q}\n", br.Mgmt)
		}
	}
	// warn: a route's state changes are logged at info; nothing on the
	// hot path logs, but keep the log quiet anyway.
	if rs.DataPath != "" {
		fmt.Fprintf(&b, "data_path: %s\n", rs.DataPath)
	}
	fmt.Fprintf(&b, "log: {level: warn, format: json}\nadmin: {listen: \"127.0.0.1:%d\", token: %q}\nstate_file: %q\n", port, token, filepath.Join(dir, "routes.json"))
	if rs.Flooding {
		fmt.Fprintf(&b, "topology: {secret: %q, refresh: 1s, max_age: 3s", benchSecret)
		if rs.Control != "" {
			fmt.Fprintf(&b, ", control_address: %q", rs.Control)
		}
		fmt.Fprintf(&b, "}\n")
	}
	if len(rs.Links) > 0 {
		fmt.Fprintf(&b, "links:\n")
		for _, l := range rs.Links {
			fmt.Fprintf(&b, "  - {between: [%s, %s]}\n", l[0], l[1])
		}
	}
	return b.String()
}

// startRouter starts bin with a configuration holding the brokers and no
// routes, link-state flooding off, and waits until every broker connection is Operational
// (/readyz).
func startRouter(ctx context.Context, bin, dir string, conns int, brokers ...broker) (*routerProc, error) {
	return startRouterSpec(ctx, bin, dir, routerSpec{Conns: conns, Brokers: brokers})
}

// startRouterSpec is startRouter with the whole configuration spelt out.
func startRouterSpec(ctx context.Context, bin, dir string, rs routerSpec) (*routerProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "fedrouter.yaml")
	token := newToken()
	if err := os.WriteFile(cfg, []byte(routerConfig(dir, token, port, rs)), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "fedrouter.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The child holds its own descriptor; ours writes nothing.
	defer func() { _ = logf.Close() }()
	api, err := adminclient.New(fmt.Sprintf("http://127.0.0.1:%d", port), adminclient.Options{Token: token})
	if err != nil {
		return nil, err
	}
	r := &routerProc{dir: dir, api: api, token: token, cfg: cfg, log: logPath}
	return r, r.exec(ctx, bin, logf, 30*time.Second)
}

// restartRouter starts bin again with old's configuration and state file
// (old has stopped), appending to its log.
func restartRouter(ctx context.Context, bin string, old *routerProc, ready time.Duration) (*routerProc, error) {
	logf, err := os.OpenFile(old.log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }() // the child holds its own descriptor
	api, err := adminclient.New(old.api.BaseURL(), adminclient.Options{Token: old.token})
	if err != nil {
		return nil, err
	}
	r := &routerProc{dir: old.dir, api: api, token: old.token, cfg: old.cfg, log: old.log}
	return r, r.exec(ctx, bin, logf, ready)
}

// exec runs the router and waits until it is ready; on failure it has
// stopped it.
func (r *routerProc) exec(ctx context.Context, bin string, logf *os.File, ready time.Duration) error {
	r.done = make(chan struct{})
	r.cmd = exec.Command(bin, "run", "--config", r.cfg)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { // owned: ends when the process exits; stop waits for it
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	if err := r.waitReady(ctx, ready); err != nil {
		r.stop()
		return err
	}
	return nil
}

func (r *routerProc) pid() int { return r.cmd.Process.Pid }

func (r *routerProc) logTail() string {
	b, _ := os.ReadFile(r.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

func (r *routerProc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		// Errors are expected until the router listens: ask again.
		if ready, _, err := r.api.Ready(ctx); err == nil && ready {
			return nil
		}
		select {
		case <-r.done:
			return fmt.Errorf("fedrouter exited before it was ready (%v): %s", r.err, r.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fedrouter not ready after %s: %s", timeout, r.logTail())
		}
	}
}

// addRoute adds a runtime route and returns its ID.
func (r *routerProc) addRoute(ctx context.Context, spec routes.Spec) (string, error) {
	st, err := r.api.AddRoute(ctx, spec)
	return st.ID, err
}

// forwarded sums the forwarded counters of the routes ids, and fails if
// one of them is Failed.
func (r *routerProc) forwarded(ctx context.Context, ids map[string]bool) (uint64, error) {
	sum, _, err := r.routeCounts(ctx, ids)
	return sum, err
}

// routeCounts sums the forwarded and copies_via_transit counters of the
// routes ids, and fails if one of them is Failed.
func (r *routerProc) routeCounts(ctx context.Context, ids map[string]bool) (forwarded, viaTransit uint64, err error) {
	sts, err := r.statuses(ctx, ids)
	for _, s := range sts {
		forwarded += s.Forwarded
		viaTransit += s.CopiesViaTransit
	}
	return forwarded, viaTransit, err
}

// routesOperational says whether every route of ids is Operational, and
// fails if one is Failed.
func (r *routerProc) routesOperational(ctx context.Context, ids map[string]bool) (bool, error) {
	sts, err := r.statuses(ctx, ids)
	up := 0
	for _, s := range sts {
		if s.State == routes.StateOperational {
			up++
		}
	}
	return err == nil && up == len(ids), err
}

// statuses are the statuses of the routes ids; an error if one of them is
// Failed, which no waiting will cure.
func (r *routerProc) statuses(ctx context.Context, ids map[string]bool) ([]routes.Status, error) {
	all, err := r.api.Routes(ctx)
	if err != nil {
		return nil, err
	}
	var out []routes.Status
	for _, s := range all {
		if !ids[s.ID] {
			continue
		}
		if s.State == routes.StateFailed {
			return nil, fmt.Errorf("route %s failed: %s", s.ID, s.LastError)
		}
		out = append(out, s)
	}
	return out, nil
}

// transitDelivered sums what the router's transit forwarders moved to dest.
func (r *routerProc) transitDelivered(ctx context.Context, dest string) (uint64, error) {
	ls, err := r.api.Links(ctx)
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, l := range ls {
		for _, t := range l.Transit {
			if t.Dest == dest {
				sum += t.Forwarded
			}
		}
	}
	return sum, nil
}

// stop ends the router with SIGTERM (it stops its routes and closes its
// connections), or SIGKILL if it has not exited after 15 s, and waits.
func (r *routerProc) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	r.api.Close()
}
