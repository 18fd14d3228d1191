package amqp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// go-amqp v1.7.0 decodes a message's annotation sections (delivery and
// message annotations, the footer) into Go maps keyed by the decoded key,
// without the check its other maps have: a key that decodes to a slice or
// a map (binary, list, map, array) makes it panic — "hash of unhashable
// type" — in its connection goroutine, which takes the router down. Routes
// forward on the engine, which reads no map into Go (amqp/engine), but
// the control plane's go-amqp receivers still take messages from brokers
// (a dynamic route's binding events, global destinations' queue events,
// QMF replies; the control exchange receives on the engine): a publisher who
// can put such a message where one of them reads could stop the router
// (docs/security.md).
//
// keyGuard sits between the socket and go-amqp and reads what the peer
// sends as it goes by, without holding any of it back: it follows the
// frames, the transfers in them, and the sections of each delivery's
// payload, and when an annotation key is of such a type it overwrites the
// key's type code with one that does not exist (0x01). go-amqp then fails
// to decode the message — an error, not a panic: it closes the link, and
// its owner attaches again (a control message so made is lost to it, as
// any malformed one). Nothing else is changed.

// badKeyCode replaces the type code of an annotation key go-amqp cannot
// hash: no AMQP type has it.
const badKeyCode = 0x01

// guardedConn passes what the peer sends through a keyGuard.
type guardedConn struct {
	net.Conn
	g keyGuard
}

func newGuardedConn(c net.Conn) *guardedConn { return &guardedConn{Conn: c} }

// Read passes on what the guard has checked. When the guard loses track
// of the stream (a bound passed, a malformed frame) it fails closed: the
// connection is closed and go-amqp gets the guard's error, never bytes it
// could not check.
func (c *guardedConn) Read(p []byte) (int, error) {
	if c.g.err != nil {
		return 0, c.g.err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.g.feed(p[:n])
		if c.g.err != nil {
			_ = c.Conn.Close() // the guard's error is the one go-amqp reports
			return 0, c.g.err
		}
	}
	return n, err
}

// ErrKeyGuard: the guard could not follow what the peer sent, and closed
// the connection rather than pass on bytes it had not checked.
var ErrKeyGuard = errors.New("amqp: the annotation key guard closed the connection")

// Frame-level states.
const (
	fsHeader  = iota // collecting the 8 bytes of a frame header (or a protocol header)
	fsExt            // skipping the extended header
	fsPerf           // collecting the performative of an AMQP frame
	fsPayload        // a transfer's payload: the delivery's scanner reads it
	fsSkip           // skipping the rest of the frame body
)

// maxPerformative bounds what is collected of one frame's performative;
// a transfer's is a few dozen bytes. Past it the frame is not inspected.
const maxPerformative = 4096

// maxDeliveries bounds the deliveries followed at once (one per link with
// a multi-frame message in progress); past it the guard closes the
// connection.
const maxDeliveries = 4096

// keyGuard follows one connection's incoming bytes. Not safe for
// concurrent use: go-amqp reads a connection from one goroutine.
type keyGuard struct {
	err      error // lost track (a malformed stream, a bound passed): the connection is closed
	st       int
	hdr      [8]byte
	hn       int
	skip     int    // fsExt, fsSkip: bytes left
	body     int    // bytes left of the current frame's body
	perf     []byte // fsPerf: the performative so far
	channel  uint16
	scanners map[uint64]*payloadScan // by channel<<32 | handle
	cur      *payloadScan
	curKey   uint64
	more     bool
}

// feed inspects b, the next bytes from the peer, rewriting in place.
func (g *keyGuard) feed(b []byte) {
	for len(b) > 0 && g.err == nil {
		switch g.st {
		case fsHeader:
			n := copy(g.hdr[g.hn:], b)
			g.hn += n
			b = b[n:]
			if g.hn == 8 {
				g.hn = 0
				g.header()
			}
		case fsExt, fsSkip:
			n := min(g.skip, len(b))
			g.skip -= n
			b = b[n:]
			if g.skip == 0 {
				if g.st == fsExt && g.body > 0 {
					g.st = fsPerf
				} else {
					g.st = fsHeader
				}
			}
		case fsPerf:
			b = g.performative(b)
		case fsPayload:
			n := min(g.body, len(b))
			g.cur.feed(b[:n])
			g.body -= n
			b = b[n:]
			if g.body == 0 {
				g.endTransfer()
			}
		}
	}
}

// stop fails the guard: what follows is not checked, so not passed on.
func (g *keyGuard) stop(format string, args ...any) {
	g.err = fmt.Errorf("%w: %s (it cannot check what follows for annotation keys go-amqp would crash on)", ErrKeyGuard, fmt.Sprintf(format, args...))
}

// header reads a complete frame header (or skips a protocol header).
func (g *keyGuard) header() {
	h := g.hdr[:]
	if string(h[:4]) == "AMQP" {
		return // protocol header: the next frame follows
	}
	size, doff, typ := binary.BigEndian.Uint32(h[:4]), int(h[4]), h[5]
	if doff < 2 || uint64(size) < uint64(doff)*4 || size > 1<<31 {
		g.stop("a malformed frame header (size %d, data offset %d)", size, doff)
		return
	}
	g.channel = binary.BigEndian.Uint16(h[6:8])
	g.body = int(size) - doff*4
	g.skip = doff*4 - 8
	switch {
	case typ != 0 || g.body == 0: // SASL or a heartbeat: not inspected
		g.skip += g.body
		g.body = 0
		g.st = fsSkip
		if g.skip == 0 {
			g.st = fsHeader
		}
	case g.skip > 0:
		g.st = fsExt
	default:
		g.st = fsPerf
	}
	g.perf = g.perf[:0]
}

// performative collects the frame's performative from b and, once it is
// whole, starts its payload; it returns what is left of b.
func (g *keyGuard) performative(b []byte) []byte {
	// Collected up to one byte past the bound: the payload that follows
	// the performative in the same read is not copied.
	n := min(g.body, len(b), maxPerformative+1-len(g.perf))
	start := len(g.perf)
	g.perf = append(g.perf, b[:n]...)
	handle, more, length, ok, complete := parseTransfer(g.perf)
	switch {
	case ok && !complete && len(g.perf) > maxPerformative:
		g.stop("a transfer performative over %d bytes", maxPerformative)
		return nil
	case !ok: // not a transfer
		g.body -= n
		g.skip, g.body = g.body, 0
		g.st = fsSkip
		if g.skip == 0 {
			g.st = fsHeader
		}
		return b[n:]
	case !complete:
		g.body -= n
		if g.body == 0 {
			g.stop("a frame that ends inside its transfer performative")
		}
		return b[n:]
	}
	used := length - start // of b, for the performative
	g.body -= used
	g.startTransfer(uint64(g.channel)<<32|uint64(handle), more)
	return b[used:]
}

func (g *keyGuard) startTransfer(key uint64, more bool) {
	if g.scanners == nil {
		g.scanners = map[uint64]*payloadScan{}
	}
	s := g.scanners[key]
	if s == nil {
		if len(g.scanners) >= maxDeliveries {
			g.stop("more than %d deliveries in progress on one connection", maxDeliveries)
			return
		}
		s = &payloadScan{}
		g.scanners[key] = s
	}
	g.cur, g.curKey, g.more = s, key, more
	g.st = fsPayload
	if g.body == 0 {
		g.endTransfer()
	}
}

func (g *keyGuard) endTransfer() {
	if !g.more {
		delete(g.scanners, g.curKey)
	}
	g.cur = nil
	g.st = fsHeader
}

// parseTransfer reads a transfer performative at the start of b: its
// handle and more flag, and its length. ok is false when b does not start
// with a transfer (or one this reader cannot follow); complete is false
// while b holds too little of it.
func parseTransfer(b []byte) (handle uint32, more bool, length int, ok, complete bool) {
	r := byteReader{b: b}
	c, got := r.byte()
	if !got {
		return 0, false, 0, true, false
	}
	if c != 0x00 {
		return 0, false, 0, false, false
	}
	code, got, valid := r.descriptor()
	if !got || !valid || code != 0x14 {
		return 0, false, 0, valid && !got, false
	}
	lc, got := r.byte()
	if !got {
		return 0, false, 0, true, false
	}
	var size, count uint32
	switch lc {
	case 0x45:
		return 0, false, 0, false, false // an empty transfer: no handle
	case 0xc0:
		s, got1 := r.byte()
		n, got2 := r.byte()
		size, count, got = uint32(s)-1, uint32(n), got1 && got2
	case 0xd0:
		s, got1 := r.uint32()
		n, got2 := r.uint32()
		size, count, got = s-4, n, got1 && got2
	default:
		return 0, false, 0, false, false
	}
	if !got {
		return 0, false, 0, true, false
	}
	end := r.i + int(size)
	if len(b) < end {
		return 0, false, 0, true, false
	}
	fields := byteReader{b: b[r.i:end]}
	for i := uint32(0); i < count && i < 6; i++ {
		switch i {
		case 0:
			h, valid := fields.uint()
			if !valid {
				return 0, false, 0, false, false
			}
			handle = h
		case 5:
			m, valid := fields.boolean()
			if !valid {
				return 0, false, 0, false, false
			}
			more = m
		default:
			if !fields.skipValue() {
				return 0, false, 0, false, false
			}
		}
	}
	return handle, more, end, true, true
}
