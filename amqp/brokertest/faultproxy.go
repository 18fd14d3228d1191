package brokertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// FaultProxy is a TCP proxy in front of one address (a broker's AMQP port)
// that injects network faults on command: Cut drops every connection and
// refuses new ones, Blackhole stalls them silently, Heal restores the path.
// Put it between a client and a broker by giving the client Addr() instead
// of the broker's address; the broker itself is left alone.
//
// It knows nothing of AMQP: bytes are copied as they come, so it serves any
// TCP protocol (the fault suite, cmd/fedchaos, and tests of router meshes).
//
// Goroutines: one accept loop, and per connection one goroutine that dials
// the target and copies one direction while a second one it joins copies
// the other. All are tracked by one WaitGroup; Close stops and waits for
// every one of them.
type FaultProxy struct {
	target string
	ln     net.Listener

	// ctx is the proxy's, parent of every connection's: cancelled by Close.
	// It starts from context.Background() because NewFaultProxy has no
	// caller's context (the fault suite and the demo hold a proxy for
	// their whole run); Close is its end.
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and every connection

	mu       sync.Mutex
	mode     FaultMode               // guarded by mu
	gate     chan struct{}           // guarded by mu: closed exactly while mode is Pass
	conns    map[*proxyConn]struct{} // guarded by mu: live connections
	closed   bool                    // guarded by mu: Close was called
	accepted uint64                  // guarded by mu
	refused  uint64                  // guarded by mu
	cuts     uint64                  // guarded by mu: connections closed by Cut
}

// FaultMode is what a FaultProxy does with traffic.
type FaultMode int

const (
	// Pass forwards bytes both ways: a healthy network.
	Pass FaultMode = iota
	// Cut has dropped every connection (reset) and resets new ones as soon
	// as they are accepted, as a refused connection would be.
	Cut
	// Blackhole keeps connections open but forwards no byte, and leaves new
	// connections unanswered: a silent partition that only timeouts detect.
	// Heal delivers what was held, as TCP would once the network is back.
	Blackhole
)

func (m FaultMode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Cut:
		return "cut"
	case Blackhole:
		return "blackhole"
	}
	return fmt.Sprintf("FaultMode(%d)", int(m))
}

// ProxyStats are a FaultProxy's counters since it started.
type ProxyStats struct {
	Mode     FaultMode
	Active   int    // connections open now
	Accepted uint64 // connections accepted and proxied (or held, in Blackhole)
	Refused  uint64 // connections reset at once because the path was cut
	Cut      uint64 // live connections closed by Cut
}

// dialTimeout bounds the proxy's own connect to the target; a client waits
// at most this long on a target that does not answer.
const dialTimeout = 10 * time.Second

// NewFaultProxy listens on 127.0.0.1 (an ephemeral port) and forwards every
// connection to target (host:port). It starts in Pass mode.
func NewFaultProxy(target string) (*FaultProxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	gate := make(chan struct{})
	close(gate)
	ctx, cancel := context.WithCancel(context.Background())
	p := &FaultProxy{target: target, ln: ln, ctx: ctx, cancel: cancel, gate: gate,
		conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's host:port, to give clients instead of the target's.
func (p *FaultProxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *FaultProxy) Target() string { return p.target }

// Cut closes every live connection with a reset and refuses (resets) new
// ones until Heal. Both ends of a cut connection see it at once; use
// Blackhole for a failure that only timeouts reveal.
func (p *FaultProxy) Cut() {
	p.mu.Lock()
	p.setModeLocked(Cut)
	victims := p.takeConnsLocked()
	p.cuts += uint64(len(victims))
	p.mu.Unlock()
	for _, c := range victims { // no I/O under the lock
		c.close(true)
	}
}

// Blackhole stops forwarding: live connections stay open, bytes read from
// either side are held (at most one buffer per direction) and new
// connections are accepted but not connected to the target until Heal.
// From Cut it keeps the dropped connections dropped.
func (p *FaultProxy) Blackhole() {
	p.mu.Lock()
	p.setModeLocked(Blackhole)
	p.mu.Unlock()
}

// Heal restores forwarding: held bytes and held connections proceed, and
// new connections are proxied again.
func (p *FaultProxy) Heal() {
	p.mu.Lock()
	p.setModeLocked(Pass)
	p.mu.Unlock()
}

// Mode is the proxy's current mode.
func (p *FaultProxy) Mode() FaultMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Stats returns the proxy's counters.
func (p *FaultProxy) Stats() ProxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ProxyStats{Mode: p.mode, Active: len(p.conns), Accepted: p.accepted, Refused: p.refused, Cut: p.cuts}
}

// Close stops listening, closes every connection and waits for all the
// proxy's goroutines. Idempotent.
func (p *FaultProxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.cancel()
		err = p.ln.Close()
		p.mu.Lock()
		p.closed = true
		victims := p.takeConnsLocked()
		p.mu.Unlock()
		for _, c := range victims {
			c.close(false)
		}
	})
	p.wg.Wait()
	return err
}

// setModeLocked switches mode and keeps the gate closed exactly in Pass,
// so waiters are released by Heal and blocked by Cut or Blackhole.
func (p *FaultProxy) setModeLocked(m FaultMode) {
	if m == p.mode {
		return
	}
	if m == Pass {
		close(p.gate)
	} else if p.mode == Pass {
		p.gate = make(chan struct{})
	}
	p.mode = m
}

func (p *FaultProxy) takeConnsLocked() []*proxyConn {
	out := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
		delete(p.conns, c)
	}
	return out
}

func (p *FaultProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			// Temporary trouble (out of file descriptors): pause, don't spin.
			select {
			case <-time.After(10 * time.Millisecond):
			case <-p.ctx.Done():
				return
			}
			continue
		}
		p.admit(c)
	}
}

// admit starts serving c, or resets it when the path is cut.
func (p *FaultProxy) admit(c net.Conn) {
	p.mu.Lock()
	if p.closed || p.mode == Cut {
		p.refused++
		p.mu.Unlock()
		reset(c)
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	pc := &proxyConn{client: c, ctx: ctx, cancel: cancel}
	p.conns[pc] = struct{}{}
	p.accepted++
	// Safe to Add here: the accept loop holds its own count, so the
	// counter is not zero while Close may be waiting.
	p.wg.Add(1)
	p.mu.Unlock()
	go p.serve(pc)
}

// serve connects pc to the target and copies both ways until either side
// or a fault ends it.
func (p *FaultProxy) serve(pc *proxyConn) {
	defer p.wg.Done()
	defer p.forget(pc)
	// In a blackhole a new connection gets no answer, like a lost SYN.
	if !p.waitGate(pc) {
		return
	}
	dctx, cancel := context.WithTimeout(pc.ctx, dialTimeout)
	var d net.Dialer
	up, err := d.DialContext(dctx, "tcp", p.target)
	cancel()
	if err != nil {
		return // the client sees its connection closed, as if refused
	}
	if !pc.attach(up) {
		return // cut or closed while dialling; attach closed up
	}
	var other sync.WaitGroup
	other.Add(1)
	go func() {
		defer other.Done()
		p.pump(pc, pc.client, up)
	}()
	p.pump(pc, up, pc.client)
	other.Wait()
}

// forget drops pc from the live set (if a fault has not already) and
// closes it.
func (p *FaultProxy) forget(pc *proxyConn) {
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
	pc.close(false)
}

// pump copies src to dst, holding each buffer at the gate. EOF is passed
// on as a half-close so protocols that shut down one direction still work.
func (p *FaultProxy) pump(pc *proxyConn, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitGate(pc) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				pc.close(false)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
			pc.close(false)
			return
		}
		if err != nil {
			pc.close(false)
			return
		}
	}
}

// waitGate returns true once bytes may flow, false if pc ended first.
func (p *FaultProxy) waitGate(pc *proxyConn) bool {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	select {
	case <-gate:
		return true
	case <-pc.ctx.Done():
		return false
	}
}

// proxyConn is one proxied connection: the client side and, once dialled,
// the target side.
type proxyConn struct {
	client net.Conn
	ctx    context.Context // cancelled by close: ends waits and the dial
	cancel context.CancelFunc

	mu     sync.Mutex
	up     net.Conn // guarded by mu: the target side, nil until dialled
	closed bool     // guarded by mu
	once   sync.Once
}

// attach records the target side; false (and up closed) if pc was closed
// meanwhile.
func (c *proxyConn) attach(up net.Conn) bool {
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.up = up
	}
	c.mu.Unlock()
	if closed { // closed outside the lock: no I/O under mu
		_ = up.Close() // never used: nothing to flush
		return false
	}
	return true
}

// close closes both sides; abort resets them (RST) instead of a clean FIN,
// which is what a cut looks like to both ends.
func (c *proxyConn) close(abort bool) {
	c.once.Do(func() {
		c.cancel()
		c.mu.Lock()
		c.closed = true
		up := c.up
		c.mu.Unlock()
		if abort {
			reset(c.client)
			if up != nil {
				reset(up)
			}
			return
		}
		// Both sides are done with; a close error (already reset by the
		// peer) leaves nothing to do.
		_ = c.client.Close()
		if up != nil {
			_ = up.Close()
		}
	})
}

// reset closes c with an RST rather than a FIN: the peer's next read or
// write fails with "connection reset", as it would if the path broke.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
