package brokertest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// echoServer is a plain TCP echo server on loopback; it echoes each
// connection until the client closes (or half-closes) it.
type echoServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close() // the echo is over either way
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

// close ends the server; close errors (a connection the proxy already
// reset) do not matter at teardown.
func (s *echoServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns { // no I/O under mu
		_ = c.Close()
	}
	s.wg.Wait()
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

// setup returns a proxy in front of a fresh echo server; goroutine leaks
// are checked after both are closed.
func setup(t *testing.T) (*FaultProxy, *echoServer) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs last
	echo := newEchoServer(t)
	p, err := NewFaultProxy(echo.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p, echo
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // teardown: often already reset by a fault
	return c
}

// roundTrip writes line and reads it back within timeout.
func roundTrip(c net.Conn, line string, timeout time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

func mustEcho(t *testing.T, c net.Conn, line string) {
	t.Helper()
	got, err := roundTrip(c, line, 5*time.Second)
	if err != nil || got != line {
		t.Fatalf("echo %q: got %q, %v", line, got, err)
	}
}

// mustFail expects the connection to be dead: reads fail (reset or EOF)
// well before the deadline.
func mustFail(t *testing.T, c net.Conn) {
	t.Helper()
	_, err := roundTrip(c, "anyone?", 5*time.Second)
	if err == nil {
		t.Fatal("connection still works")
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection hangs instead of failing: %v", err)
	}
}

// mustRefuse expects a new connection to addr to fail: the reset may come
// before the dial returns or on the first read.
func mustRefuse(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = c.Close() }() // already reset: that is the point
	mustFail(t, c)
}

// eventually polls f until it is true or the deadline passes.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("not true after 5s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFaultProxyPassCutHeal(t *testing.T) {
	p, _ := setup(t)
	if p.Mode() != Pass {
		t.Fatalf("new proxy mode %v", p.Mode())
	}
	a, b := dial(t, p.Addr()), dial(t, p.Addr())
	mustEcho(t, a, "hello")
	mustEcho(t, b, "world")
	eventually(t, "2 active connections", func() bool { return p.Stats().Active == 2 })

	p.Cut()
	mustFail(t, a)
	mustFail(t, b)
	// New connections are refused while cut: accepted, then reset at once.
	mustRefuse(t, p.Addr())
	st := p.Stats()
	if st.Mode != Cut || st.Active != 0 || st.Cut != 2 || st.Refused != 1 {
		t.Fatalf("stats after cut: %+v", st)
	}

	p.Heal()
	mustEcho(t, dial(t, p.Addr()), "again")
	if st := p.Stats(); st.Mode != Pass || st.Accepted != 3 {
		t.Fatalf("stats after heal: %+v", st)
	}
}

func TestFaultProxyBlackholeHoldsAndDelivers(t *testing.T) {
	p, _ := setup(t)
	old := dial(t, p.Addr())
	mustEcho(t, old, "before")

	p.Blackhole()
	// Nothing comes back while blackholed: the read times out, the
	// connection stays open.
	if got, err := roundTrip(old, "held", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackholed connection answered %q, %v", got, err)
	}
	// A new connection is accepted but gets no answer either.
	fresh := dial(t, p.Addr())
	if got, err := roundTrip(fresh, "new", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection in a blackhole answered %q, %v", got, err)
	}

	p.Heal()
	// What was held is delivered, in order, on both connections.
	for _, c := range []struct {
		conn net.Conn
		want string
	}{{old, "held"}, {fresh, "new"}} {
		if err := c.conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		got, err := bufio.NewReader(c.conn).ReadString('\n')
		if err != nil || got != c.want+"\n" {
			t.Fatalf("after heal: got %q, %v; want %q", got, err, c.want)
		}
	}
	mustEcho(t, old, "after")
}

func TestFaultProxyCutDuringBlackhole(t *testing.T) {
	p, _ := setup(t)
	c := dial(t, p.Addr())
	mustEcho(t, c, "x")
	p.Blackhole()
	pending := dial(t, p.Addr()) // held, never dialled upstream
	eventually(t, "2 active connections", func() bool { return p.Stats().Active == 2 })
	p.Cut()
	mustFail(t, c)
	mustFail(t, pending)
	p.Heal()
	mustEcho(t, dial(t, p.Addr()), "y")
}

func TestFaultProxyHalfClose(t *testing.T) {
	p, _ := setup(t)
	c := dial(t, p.Addr())
	if _, err := io.WriteString(c, "bye"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c) // the echo, then EOF passed back through
	if err != nil || string(got) != "bye" {
		t.Fatalf("half-close: got %q, %v", got, err)
	}
	eventually(t, "connection forgotten", func() bool { return p.Stats().Active == 0 })
}

func TestFaultProxyTargetDown(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, ignore)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	p, err := NewFaultProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	// Close's only error is the listener's, of no interest here.
	defer func() { _ = p.Close() }()
	mustRefuse(t, p.Addr()) // closed as soon as the target refuses
}

func TestFaultProxyClose(t *testing.T) {
	p, _ := setup(t)
	c := dial(t, p.Addr())
	mustEcho(t, c, "x")
	p.Blackhole()
	_ = dial(t, p.Addr()) // a held connection must not keep Close waiting
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	mustFail(t, c)
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("proxy still accepts after Close")
	}
	if err := p.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestNewFaultProxyBadTarget(t *testing.T) {
	if _, err := NewFaultProxy("no-port"); err == nil || !strings.Contains(err.Error(), "no-port") {
		t.Fatalf("got %v", err)
	}
}
