package amqp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"

	goamqp "github.com/Azure/go-amqp"
)

// transferFrame encodes an AMQP frame on channel holding a transfer on
// handle (more as given) and payload.
func transferFrame(channel uint16, handle byte, more bool, payload []byte) []byte {
	moreCode := byte(0x42)
	if more {
		moreCode = 0x41
	}
	fields := []byte{0x52, handle, 0x52, 7, 0xa0, 1, 'x', 0x43, 0x42, moreCode}
	perf := append([]byte{0x00, 0x53, 0x14, 0xc0, byte(len(fields) + 1), 6}, fields...)
	body := append(perf, payload...)
	f := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint32(f, uint32(8+len(body)))
	f[4], f[5] = 2, 0
	binary.BigEndian.PutUint16(f[6:], channel)
	return append(f, body...)
}

// annotations encodes an annotation section (code 0x71, 0x72 or 0x78)
// whose map has one key, encoded as given, with the value 1.
func annotations(code byte, key []byte) []byte {
	items := append(append([]byte{}, key...), 0x52, 1)
	return append([]byte{0x00, 0x53, code, 0xc1, byte(len(items) + 1), 2}, items...)
}

func marshal(t testing.TB, m *goamqp.Message) []byte {
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decode is what go-amqp makes of a payload: nil, an error, or a panic.
func decode(payload []byte) (panicked any, err error) {
	defer func() { panicked = recover() }()
	var m goamqp.Message
	return nil, m.UnmarshalBinary(payload)
}

// guardStream feeds stream through a keyGuard in random pieces and
// returns what go-amqp would read.
func guardStream(stream []byte, rng *rand.Rand) []byte {
	out := append([]byte(nil), stream...)
	var g keyGuard
	for i := 0; i < len(out); {
		n := min(len(out)-i, 1+rng.IntN(40))
		g.feed(out[i : i+n])
		i += n
	}
	return out
}

// payloadOf reassembles the payloads of the transfer frames in stream
// (each built by transferFrame).
func payloadOf(stream []byte) []byte {
	var p []byte
	for len(stream) >= 8 {
		if string(stream[:4]) == "AMQP" {
			stream = stream[8:]
			continue
		}
		size := binary.BigEndian.Uint32(stream)
		p = append(p, stream[8+16:size]...)
		stream = stream[size:]
	}
	return p
}

// Messages whose annotation keys go-amqp cannot hash reach it as an
// error, not a panic; every other message reaches it unchanged — however
// the bytes are cut into reads and the payload into transfers.
func TestKeyGuard(t *testing.T) {
	good := marshal(t, &goamqp.Message{
		Annotations:           goamqp.Annotations{"x-opt-a": int64(1), "x-fedrouter-moves": int64(2)},
		DeliveryAnnotations:   goamqp.Annotations{"x-opt-d": "v"},
		Properties:            &goamqp.MessageProperties{MessageID: "id-1"},
		ApplicationProperties: map[string]any{"k": []byte("binary values are fine"), "nested": map[string]any{"a": int64(1)}},
		Data:                  [][]byte{bytes.Repeat([]byte("body"), 300)},
		Footer:                goamqp.Annotations{"f": true},
	})
	cases := []struct {
		name    string
		payload []byte
		bad     bool
	}{
		{"a good message", good, false},
		{"binary key in message annotations", append(annotations(0x72, append([]byte{0xa0, 4}, "keyz"...)), good...), true},
		{"binary32 key in delivery annotations", annotations(0x71, append([]byte{0xb0, 0, 0, 0, 2}, "kk"...)), true},
		{"list key in the footer", append(good, annotations(0x78, []byte{0xc0, 3, 1, 0x52, 1})...), true},
		{"map key", annotations(0x72, []byte{0xc1, 1, 0}), true},
		{"array key", annotations(0x72, []byte{0xe0, 3, 1, 0x52, 5}), true},
		{"list0 key", annotations(0x72, []byte{0x45}), true},
		{"described key", annotations(0x72, []byte{0x00, 0x53, 0x01, 0xa0, 1, 'b'}), true},
		{"symbol key", annotations(0x72, append([]byte{0xa3, 4}, "keyz"...)), false},
		{"ulong descriptor form", []byte{0x00, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x72, 0xc1, 5, 2, 0xa0, 1, 'k', 0x41}, true},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		if p, _ := decode(c.payload); (p != nil) != c.bad {
			t.Fatalf("%s: go-amqp panics %v, the case says %v", c.name, p, c.bad)
		}
		for round := range 50 {
			// The payload in 1 to 4 transfers on handle 3, behind a
			// protocol header and another link's message.
			stream := append([]byte("AMQP\x00\x01\x00\x00"), transferFrame(1, 9, false, good)...)
			parts := 1 + rng.IntN(4)
			for i := range parts {
				lo, hi := len(c.payload)*i/parts, len(c.payload)*(i+1)/parts
				stream = append(stream, transferFrame(1, 3, i < parts-1, c.payload[lo:hi])...)
			}
			out := guardStream(stream, rng)
			got := payloadOf(out)[len(good):]
			p, err := decode(got)
			switch {
			case p != nil:
				t.Fatalf("%s, round %d: go-amqp panicked after the guard: %v", c.name, round, p)
			case c.bad && err == nil:
				t.Fatalf("%s, round %d: decoded without an error", c.name, round)
			case !c.bad && !bytes.Equal(out, stream):
				t.Fatalf("%s, round %d: a good stream was changed", c.name, round)
			}
			if other := payloadOf(out)[:len(good)]; !bytes.Equal(other, good) {
				t.Fatalf("%s, round %d: the other link's message was changed", c.name, round)
			}
		}
	}
}

// Whatever a peer sends in a transfer, go-amqp does not panic on the
// payload the guard passes on.
func FuzzKeyGuard(f *testing.F) {
	f.Add(annotations(0x72, append([]byte{0xa0, 4}, "keyz"...)), uint8(1))
	f.Add(marshal(f, &goamqp.Message{Annotations: goamqp.Annotations{"a": int64(1)}, Data: [][]byte{[]byte("x")}}), uint8(3))
	f.Fuzz(func(t *testing.T, payload []byte, parts uint8) {
		n := 1 + int(parts)%4
		var stream []byte
		for i := range n {
			lo, hi := len(payload)*i/n, len(payload)*(i+1)/n
			stream = append(stream, transferFrame(0, 1, i < n-1, payload[lo:hi])...)
		}
		out := guardStream(stream, rand.New(rand.NewPCG(uint64(len(payload)), uint64(parts))))
		if p, _ := decode(payloadOf(out)); p != nil {
			t.Fatalf("go-amqp panicked on %x after the guard: %v", payload, p)
		}
	})
}

// The key's type code, in place, is one no AMQP type has.
func TestKeyGuardRewritesInPlace(t *testing.T) {
	var g keyGuard
	b := transferFrame(0, 1, false, annotations(0x72, append([]byte{0xa0, 1}, 'k')))
	g.feed(b)
	if got := b[8+16+6]; got != badKeyCode {
		t.Fatalf("key type code %#02x", got)
	}
}

// The guard's cost per 256-byte message, received in 64 KiB reads.
func BenchmarkKeyGuard(b *testing.B) {
	msg := marshal(b, &goamqp.Message{
		Header:                &goamqp.MessageHeader{Durable: true},
		Annotations:           goamqp.Annotations{"x-opt-a": int64(1)},
		Properties:            &goamqp.MessageProperties{MessageID: "id-000001"},
		ApplicationProperties: map[string]any{"seq": int64(1)},
		Data:                  [][]byte{make([]byte, 256)},
	})
	frame := transferFrame(1, 3, false, msg)
	var stream []byte
	per := 0
	for len(stream)+len(frame) <= 64<<10 {
		stream = append(stream, frame...)
		per++
	}
	var g keyGuard
	b.ResetTimer()
	for range b.N {
		g.feed(stream)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/msg")
}

// streamConn is a net.Conn that reads a fixed stream and records Close.
type streamConn struct {
	net.Conn
	r      *bytes.Reader
	closed bool
}

func (c *streamConn) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c *streamConn) Close() error               { c.closed = true; return nil }

// At its bound of deliveries in progress the guard fails closed: the
// connection is closed with ErrKeyGuard, and the message with a key
// go-amqp would crash on that follows never reaches go-amqp (the guard
// used to switch itself off for the connection's life and pass it).
func TestKeyGuardFailsClosed(t *testing.T) {
	var stream []byte
	for i := range maxDeliveries + 1 { // each a first transfer of a message, more to come
		stream = append(stream, transferFrame(uint16(i/256), byte(i%256), true, []byte{0x00})...)
	}
	poison := transferFrame(100, 1, false, annotations(0x72, append([]byte{0xa0, 4}, "keyz"...)))
	stream = append(stream, poison...)
	c := &streamConn{r: bytes.NewReader(stream)}
	gc := newGuardedConn(c)
	got, err := io.ReadAll(gc)
	if !errors.Is(err, ErrKeyGuard) || !strings.Contains(err.Error(), "more than 4096 deliveries in progress") {
		t.Fatalf("read past the bound: %v", err)
	}
	if !c.closed {
		t.Fatal("the connection was not closed")
	}
	if bytes.Contains(got, poison) || len(got) >= len(stream)-len(poison) {
		t.Fatalf("%d of %d bytes passed on, the poison message among them: %v", len(got), len(stream), bytes.Contains(got, poison))
	}
	if n, err := gc.Read(make([]byte, 8)); n != 0 || !errors.Is(err, ErrKeyGuard) {
		t.Fatalf("a read after: %d %v", n, err)
	}
}

// A transfer whose payload comes in the same read as its performative,
// over 4 KiB in all, is followed like any other: the guard neither stops
// nor, failing closed, closes the connection, and a bad key after it is
// still caught. (The payload used to be collected with the performative
// and counted against its 4 KiB bound: the guard switched itself off on
// every large message read whole.)
func TestKeyGuardFollowsLargeTransfersInOneRead(t *testing.T) {
	var g keyGuard
	big := transferFrame(0, 1, false, marshal(t, &goamqp.Message{Data: [][]byte{bytes.Repeat([]byte("x"), 64<<10)}}))
	bad := transferFrame(0, 1, false, annotations(0x72, append([]byte{0xa0, 1}, 'k')))
	stream := append(append([]byte{}, big...), bad...)
	g.feed(stream)
	if g.err != nil {
		t.Fatalf("a 64 KiB message read whole: %v", g.err)
	}
	if got := stream[len(big)+8+16+6]; got != badKeyCode {
		t.Fatalf("the bad key after it: type code %#02x, want it rewritten", got)
	}
}
