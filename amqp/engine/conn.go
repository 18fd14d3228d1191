package engine

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Conn is one AMQP connection. It owns two goroutines: the reader (reads,
// decodes, dispatches, calls receivers' callbacks) and the writer
// (flushes the outgoing buffer). Both stop on Close or on the first
// error; Done is closed once they are stopping and Err says why.
type Conn struct {
	nc   net.Conn
	opts Options
	fr   *wire.FrameReader

	// The peer's open, and what follows from it; read-only after Dial.
	peer         wire.Open
	peerMaxFrame uint32
	peerIdle     time.Duration

	mu       sync.Mutex          // guards sessions
	sessions map[uint16]*Session // by local channel

	// byRemote is the reader's: sessions by the peer's channel.
	byRemote map[uint16]*Session

	w writer

	reads, frames atomic.Uint64 // read calls and frames read, for ReadStats

	done         chan struct{}
	doneOnce     sync.Once
	err          error // set before done is closed
	remoteClosed chan struct{}
	wg           sync.WaitGroup
}

// Dial connects to addr (host:port), over TLS when opts.TLS is set,
// negotiates SASL and exchanges open. A SASL refusal is an error
// wrapping ErrAuth, never retried here.
func Dial(ctx context.Context, addr string, opts Options) (*Conn, error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("engine: dial %s: %w", addr, err)
	}
	var nc net.Conn
	if opts.TLS != nil {
		cfg := opts.TLS.Clone()
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			cfg.ServerName = host
		}
		nc, err = (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
	} else {
		nc, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: dial %s: %w", addr, err)
	}
	if opts.Hostname == "" {
		opts.Hostname = host
	}
	c, err := newConn(ctx, nc, opts)
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("engine: dial %s: %w", addr, err)
	}
	return c, nil
}

// newConn runs the handshake on nc and starts the goroutines.
func newConn(ctx context.Context, nc net.Conn, opts Options) (*Conn, error) {
	c := &Conn{
		nc:           nc,
		opts:         opts,
		sessions:     map[uint16]*Session{},
		byRemote:     map[uint16]*Session{},
		done:         make(chan struct{}),
		remoteClosed: make(chan struct{}),
	}
	c.fr = wire.NewFrameReader(countingReader{c}, opts.MaxFrameSize)
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	err := c.handshake()
	if !stop() || ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	c.w.init(c)
	if opts.IdleTimeout > 0 {
		c.fr.OnFill = func() { _ = nc.SetReadDeadline(time.Now().Add(2 * opts.IdleTimeout)) }
	}
	c.wg.Add(2)
	go c.readLoop()
	go c.w.loop()
	return c, nil
}

func (c *Conn) handshake() error {
	if c.opts.SASL != SASLNone {
		if err := c.sasl(); err != nil {
			return err
		}
	}
	if c.opts.ContainerID == "" {
		var id [8]byte
		_, _ = rand.Read(id[:])
		c.opts.ContainerID = "fedrouter-" + hex.EncodeToString(id[:])
	}
	open := wire.Open{
		ContainerID:  c.opts.ContainerID,
		Hostname:     c.opts.Hostname,
		MaxFrameSize: c.opts.MaxFrameSize,
		ChannelMax:   c.opts.ChannelMax,
	}
	if c.opts.IdleTimeout > 0 {
		open.IdleTimeout = uint32(c.opts.IdleTimeout / time.Millisecond)
	}
	b := append([]byte(nil), wire.ProtoAMQP[:]...)
	b, mark := wire.BeginFrame(b, wire.FrameAMQP, 0)
	b = wire.EndFrame(wire.AppendOpen(b, &open), mark)
	if _, err := c.nc.Write(b); err != nil {
		return err
	}
	if err := c.expectProto(wire.ProtoAMQP); err != nil {
		return err
	}
	return c.readOpen()
}

func (c *Conn) expectProto(want [8]byte) error {
	got, err := c.fr.ReadProtoHeader()
	if err != nil {
		return err
	}
	if got != want {
		return violate(condNotAllowed, "protocol header %q, expected %q", got[:], want[:])
	}
	return nil
}

// readOpen reads the peer's open, or the close it sends instead.
func (c *Conn) readOpen() error {
	for {
		h, body, err := c.fr.Next()
		if err != nil {
			return err
		}
		if len(body) == 0 {
			continue
		}
		if h.Type != wire.FrameAMQP {
			return violate(condFramingError, "frame type %d before open", h.Type)
		}
		d := wire.NewDecoder(body)
		switch desc := d.Descriptor(); desc {
		case wire.DescOpen:
			d.Open(&c.peer)
		case wire.DescClose:
			var cl wire.Close
			d.Close(&cl)
			return &ConnError{Remote: cl.Error, Err: d.Err()}
		default:
			return violate(condFramingError, "performative 0x%x before open", desc)
		}
		if err := d.Err(); err != nil {
			return fmt.Errorf("open: %w", err)
		}
		c.peerMaxFrame = max(min(c.peer.MaxFrameSize, 1<<24), wire.MinMaxFrameSize)
		c.peerIdle = time.Duration(c.peer.IdleTimeout) * time.Millisecond
		return nil
	}
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended (nil while it runs).
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// PeerOpen is the peer's open performative.
func (c *Conn) PeerOpen() wire.Open { return c.peer }

// Close ends the sessions still open and waits for the peer's ends (at
// most a quarter of CloseTimeout), then sends close and waits for the
// peer's (the whole of it at most CloseTimeout), and stops the
// goroutines. It returns the peer's close error, if any.
//
// Ending the sessions first is for qpidd (seen with 1.40): a connection that
// goes with receivers still attached can crash it (endSessions). A peer
// that does not answer an end costs the quarter, no more.
func (c *Conn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.CloseTimeout)
	defer cancel()
	ends, endsDone := context.WithTimeout(ctx, c.opts.CloseTimeout/4)
	c.endSessions(ends)
	endsDone()
	c.sendFrame(0, func(b []byte) []byte { return wire.AppendClose(b, &wire.Close{}) })
	select {
	case <-c.remoteClosed:
	case <-c.done:
	case <-ctx.Done():
	}
	c.shutdown(ErrClosed)
	c.wg.Wait()
	var ce *ConnError
	if errors.As(c.err, &ce) && ce.Remote != nil {
		return c.err
	}
	return nil
}

// shutdown records why the connection ends (the first reason wins) and
// starts stopping: the writer flushes what it holds (bounded by
// CloseTimeout) and closes the socket, which ends the reader.
func (c *Conn) shutdown(err error) {
	c.doneOnce.Do(func() {
		c.err = err
		close(c.done)
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.opts.CloseTimeout))
		c.w.wakeup()
	})
}

// fail ends the connection for a local reason, telling the peer why.
func (c *Conn) fail(err error) {
	cond := "amqp:internal-error"
	var v *violation
	if errors.As(err, &v) {
		cond = v.cond
	} else if errors.Is(err, wire.ErrDecode) {
		cond = condDecodeError
	} else if errors.Is(err, wire.ErrFrame) {
		cond = condFramingError
	}
	e := &wire.Error{Condition: cond, Description: err.Error()}
	c.sendFrame(0, func(b []byte) []byte { return wire.AppendClose(b, &wire.Close{Error: e}) })
	c.shutdown(&ConnError{Err: err})
}

// sendFrame appends one frame on channel ch, built by perf (not on the
// hot path: the closure may allocate).
func (c *Conn) sendFrame(ch uint16, perf func([]byte) []byte) {
	b := c.w.lock()
	b, mark := wire.BeginFrame(b, wire.FrameAMQP, ch)
	c.w.unlock(wire.EndFrame(perf(b), mark))
}

// countingReader counts the read calls made on the socket.
type countingReader struct{ c *Conn }

func (r countingReader) Read(p []byte) (int, error) {
	r.c.reads.Add(1)
	return r.c.nc.Read(p)
}

// ReadStats says how many read calls the connection made and how many
// frames (heartbeats included) it read after open.
func (c *Conn) ReadStats() (reads, frames uint64) { return c.reads.Load(), c.frames.Load() }
