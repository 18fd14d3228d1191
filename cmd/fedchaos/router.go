package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

// routerProc is one `fedrouter run` process. The suite sees the router only
// as an operator does: its configuration file, its log and its admin API.
type routerProc struct {
	cmd    *exec.Cmd
	logP   string
	api    *adminclient.Client // its admin API
	exited chan struct{}       // closed when the process has been reaped
	err    error               // why it exited (and closing its log); read after exited is closed
}

// adminLine is the router's start line in JSON logs; it carries the admin
// address, a free port chosen by the suite (freeListen).
var adminLine = regexp.MustCompile(`"admin":"([^"]+)".*"message":"fedrouter started"`)

// procSpec is how the suite starts a router process.
type procSpec struct {
	bin, config, dir string
	logName          string        // the log is dir/<logName>.log
	env              []string      // added to the suite's environment
	apiTimeout       time.Duration // bound on each admin API call
}

// startRouter runs `bin run --config config`, logging to dir/logName.log,
// and returns once the router reported its admin address.
func startRouter(ctx context.Context, ps procSpec) (*routerProc, error) {
	logP := filepath.Join(ps.dir, ps.logName+".log")
	f, err := os.Create(logP)
	if err != nil {
		return nil, err
	}
	w := &lineWatcher{w: f, re: adminLine, found: make(chan string, 1)}
	cmd := exec.Command(ps.bin, "run", "--config", ps.config)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = append(os.Environ(), ps.env...)
	cmd.SysProcAttr = routerProcAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close() // empty: nothing was started to write to it
		return nil, fmt.Errorf("start %s: %w", ps.bin, err)
	}
	p := &routerProc{cmd: cmd, logP: logP, exited: make(chan struct{})}
	go func() { // the reaper: exactly one per process, ends with it
		p.err = errors.Join(cmd.Wait(), f.Close())
		close(p.exited)
	}()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case addr := <-w.found:
		if p.api, err = apiClient(ps.config, addr, ps.apiTimeout); err == nil {
			return p, nil
		}
	case <-p.exited:
		return nil, fmt.Errorf("router exited at start (%v); log %s:\n%s", p.err, logP, tail(logP, 20))
	case <-timer.C:
		err = fmt.Errorf("router did not log its admin address within 30s; log %s:\n%s", logP, tail(logP, 20))
	case <-ctx.Done():
		err = ctx.Err()
	}
	return nil, errors.Join(err, p.kill())
}

// apiClient is a client of the router at addr, with the token the router
// generated beside its state file, found from its configuration as the
// CLI's --config finds it. The timeout is short: the suite polls the
// route during faults and must not stall on a router being killed.
func apiClient(configPath, addr string, timeout time.Duration) (*adminclient.Client, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, err
	}
	e, err := cfg.AdminEndpoint()
	if err != nil {
		return nil, err
	}
	return adminclient.New("http://"+addr, adminclient.Options{Token: e.Token, CAFile: e.CAFile, Timeout: timeout})
}

// kill sends SIGKILL — the fault, or the last resort — and waits until the
// process is reaped (at most 10 s: SIGKILL cannot be ignored).
func (p *routerProc) kill() error {
	defer p.closeAPI()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill router pid %d: %w", p.cmd.Process.Pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("router pid %d still running 10s after SIGKILL", p.cmd.Process.Pid)
	}
}

// stop asks the router to stop (SIGTERM) and kills it if it has not exited
// within grace.
func (p *routerProc) stop(grace time.Duration) error {
	defer p.closeAPI()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	if err := p.kill(); err != nil {
		return err
	}
	return fmt.Errorf("router did not stop within %v of SIGTERM; killed", grace)
}

// signal sends sig (SIGSTOP, SIGCONT) to the process.
func (p *routerProc) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%v to router pid %d: %w", sig, p.cmd.Process.Pid, err)
	}
	return nil
}

// closeAPI drops the client's idle connections to a router that is gone.
func (p *routerProc) closeAPI() {
	if p.api != nil {
		p.api.Close()
	}
}

// route returns the router's only route.
func (p *routerProc) route(ctx context.Context) (routes.Status, error) {
	rs, err := p.api.Routes(ctx)
	if err != nil {
		return routes.Status{}, err
	}
	if len(rs) != 1 {
		return routes.Status{}, fmt.Errorf("GET /api/v1/routes: %d routes, want 1", len(rs))
	}
	return rs[0], nil
}

// lineWatcher passes output to w and reports the first submatch of re in
// a complete line. exec calls Write from one goroutine at a time (Stdout
// and Stderr are the same writer), so buf needs no lock.
type lineWatcher struct {
	w     io.Writer
	re    *regexp.Regexp
	found chan string // receives one match
	buf   []byte
	once  sync.Once
}

func (l *lineWatcher) Write(b []byte) (int, error) {
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if m := l.re.FindSubmatch(l.buf[:i]); m != nil {
			l.once.Do(func() { l.found <- string(m[1]) })
		}
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 { // a line this long is not the start line
		l.buf = l.buf[:0]
	}
	return l.w.Write(b)
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
