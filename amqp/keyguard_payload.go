package amqp

import "encoding/binary"

// payloadScan follows one delivery's payload — a sequence of sections,
// each a described value — across the transfers that carry it, and
// overwrites the type code of an annotation key go-amqp cannot hash
// (keyguard.go). It keeps only the few bytes of an item's header that
// have not all arrived; what it skips it does not copy.
type payloadScan struct {
	dead    bool   // stopped: a key was overwritten, or the payload is not what go-amqp reads
	pending []byte // the start of an item whose header has not all arrived
	skip    uint64 // bytes still to pass over (the body of an item)
	values  int    // values still to pass over whole
	// In an annotation section's map: the items (keys and values) left,
	// and whether the next one is a key.
	inMap   bool
	items   uint32
	nextKey bool
}

// feed reads the next bytes of the payload, rewriting in place.
func (s *payloadScan) feed(b []byte) {
	for len(b) > 0 && !s.dead {
		if s.skip > 0 {
			n := min(s.skip, uint64(len(b)))
			s.skip -= n
			b = b[n:]
			continue
		}
		// The bytes of the next item: what was pending, then b. Only
		// the item's first byte (its type code) is ever rewritten, and
		// only when it arrived in b.
		var item []byte
		fromB := 0 // where b starts in item
		if len(s.pending) > 0 {
			item = append(s.pending, b...)
			fromB = len(s.pending)
		} else {
			item = b
		}
		used, ok := s.step(item, fromB == 0, b)
		switch {
		case !ok:
			s.dead = true
		case used == 0: // incomplete: keep it for the next bytes (at most a header)
			if len(item) > 32 {
				s.dead = true
			}
			s.pending = append(s.pending[:0], item...)
			return
		default:
			s.pending = s.pending[:0]
			b = b[max(0, used-fromB):]
		}
	}
}

// step reads one item at the start of item (a section start, a map
// header, a key, a value's header). It returns how many bytes it used
// (0: incomplete) and false when the payload cannot be followed. first
// says item[0] is b[0], the byte that may be rewritten.
func (s *payloadScan) step(item []byte, first bool, b []byte) (int, bool) {
	if s.values > 0 {
		return s.value(item)
	}
	if s.inMap && s.items == 0 {
		s.inMap = false
	}
	if !s.inMap {
		return s.section(item)
	}
	if s.nextKey && unhashableKey(item[0]) {
		if !first {
			return 0, false // cannot happen: a key is read as soon as its first byte arrives
		}
		b[0] = badKeyCode
		s.dead = true // go-amqp stops at it
		return 1, true
	}
	s.items--
	s.nextKey = !s.nextKey
	s.values = 1
	return s.value(item)
}

// section reads a section's start: 0x00, its descriptor, and for an
// annotation section the header of its map.
func (s *payloadScan) section(item []byte) (int, bool) {
	r := byteReader{b: item}
	c, got := r.byte()
	if !got {
		return 0, true
	}
	if c != 0x00 {
		return 0, false // go-amqp refuses it
	}
	code, got, valid := r.descriptor()
	if !valid {
		return 0, false
	}
	if !got {
		return 0, true
	}
	if code != 0x71 && code != 0x72 && code != 0x78 {
		s.values = 1 // the section's value, passed over
		return r.i, true
	}
	mc, got := r.byte()
	if !got {
		return 0, true
	}
	var count uint32
	switch mc {
	case 0x40: // null: no annotations
		return r.i, true
	case 0xc1:
		if _, got = r.byte(); got {
			var n byte
			n, got = r.byte()
			count = uint32(n)
		}
	case 0xd1:
		if _, got = r.uint32(); got {
			count, got = r.uint32()
		}
	default:
		return 0, false
	}
	if !got {
		return 0, true
	}
	s.inMap, s.items, s.nextKey = count > 0, count, true
	return r.i, true
}

// value reads the header of a value to pass over and sets skip to its
// body; a described value adds its descriptor and value to values.
func (s *payloadScan) value(item []byte) (int, bool) {
	r := byteReader{b: item}
	c, got := r.byte()
	if !got {
		return 0, true
	}
	if c == 0x00 {
		s.values++ // the descriptor and the value for the one described
		return 1, true
	}
	width, sizeBytes, valid := typeWidth(c)
	if !valid {
		return 0, false
	}
	size := uint64(width)
	switch sizeBytes {
	case 1:
		n, got := r.byte()
		if !got {
			return 0, true
		}
		size = uint64(n)
	case 4:
		n, got := r.uint32()
		if !got {
			return 0, true
		}
		size = uint64(n)
	}
	s.values--
	used := uint64(r.i)
	// What of the body is already here is passed over now, the rest by skip.
	here := min(size, uint64(len(item))-used)
	s.skip = size - here
	return int(used + here), true
}

// unhashableKey says whether a key of type code c decodes, in go-amqp, to
// a slice or a map (or a described value, which may hold one).
func unhashableKey(c byte) bool {
	switch c {
	case 0xa0, 0xb0, // binary
		0x45, 0xc0, 0xd0, // list
		0xc1, 0xd1, // map
		0xe0, 0xf0, // array
		0x00: // described
		return true
	}
	return false
}

// typeWidth is the layout of AMQP type code c: a fixed width, or the
// bytes of its size field (1 or 4; the size counts the bytes after it).
func typeWidth(c byte) (width, sizeBytes int, ok bool) {
	switch {
	case c >= 0x40 && c <= 0x45:
		return 0, 0, true
	case c >= 0x50 && c <= 0x56:
		return 1, 0, true
	case c == 0x60 || c == 0x61:
		return 2, 0, true
	case c >= 0x70 && c <= 0x74:
		return 4, 0, true
	case c >= 0x80 && c <= 0x84:
		return 8, 0, true
	case c == 0x94 || c == 0x98:
		return 16, 0, true
	case c == 0xa0 || c == 0xa1 || c == 0xa3 || c == 0xc0 || c == 0xc1 || c == 0xe0:
		return 0, 1, true
	case c == 0xb0 || c == 0xb1 || c == 0xb3 || c == 0xd0 || c == 0xd1 || c == 0xf0:
		return 0, 4, true
	}
	return 0, 0, false
}

// byteReader reads AMQP encodings from a slice; got is false when the
// slice ends first.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) byte() (byte, bool) {
	if r.i >= len(r.b) {
		return 0, false
	}
	r.i++
	return r.b[r.i-1], true
}

func (r *byteReader) uint32() (uint32, bool) {
	if r.i+4 > len(r.b) {
		return 0, false
	}
	r.i += 4
	return binary.BigEndian.Uint32(r.b[r.i-4:]), true
}

// descriptor reads a section's or performative's descriptor code as
// go-amqp does (the low byte of a ulong); valid is false for a form it
// refuses.
func (r *byteReader) descriptor() (code byte, got, valid bool) {
	c, got := r.byte()
	if !got {
		return 0, false, true
	}
	switch c {
	case 0x44:
		return 0, true, true
	case 0x53:
		v, got := r.byte()
		return v, got, true
	case 0x80:
		if r.i+8 > len(r.b) {
			return 0, false, true
		}
		r.i += 8
		return r.b[r.i-1], true, true
	}
	return 0, true, false
}

// uint reads an AMQP uint (a transfer's handle); false if it is not one
// or the slice ends (a complete performative is read).
func (r *byteReader) uint() (uint32, bool) {
	c, got := r.byte()
	if !got {
		return 0, false
	}
	switch c {
	case 0x43:
		return 0, true
	case 0x52:
		v, got := r.byte()
		return uint32(v), got
	case 0x70:
		return r.uint32()
	}
	return 0, false
}

// boolean reads an AMQP boolean (null is false).
func (r *byteReader) boolean() (bool, bool) {
	c, got := r.byte()
	if !got {
		return false, false
	}
	switch c {
	case 0x40, 0x42:
		return false, true
	case 0x41:
		return true, true
	case 0x56:
		v, got := r.byte()
		return v != 0, got
	}
	return false, false
}

// skipValue passes over one whole value in a complete slice.
func (r *byteReader) skipValue() bool {
	c, got := r.byte()
	if !got {
		return false
	}
	if c == 0x00 { // a descriptor, then the value
		if !r.skipValue() {
			return false
		}
		return r.skipValue()
	}
	width, sizeBytes, ok := typeWidth(c)
	if !ok {
		return false
	}
	size := width
	switch sizeBytes {
	case 1:
		n, got := r.byte()
		if !got {
			return false
		}
		size = int(n)
	case 4:
		n, got := r.uint32()
		if !got || n > uint32(len(r.b)) {
			return false
		}
		size = int(n)
	}
	if r.i+size > len(r.b) {
		return false
	}
	r.i += size
	return true
}
