package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// MaxDepth bounds the nesting of compound values a Decoder follows.
const MaxDepth = 32

// ErrDecode is wrapped by every decoding error.
var ErrDecode = errors.New("wire: decode")

// Decoder reads AMQP values from a byte slice. The first error sticks:
// later reads return zero values, so a caller checks Err once after a
// run of reads.
type Decoder struct {
	b     []byte
	off   int
	err   error
	depth int
}

// NewDecoder returns a Decoder over b.
func NewDecoder(b []byte) Decoder { return Decoder{b: b} }

// Reset points d at b, clearing its error.
func (d *Decoder) Reset(b []byte) { *d = Decoder{b: b} }

// Err is the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Offset is how many bytes have been read.
func (d *Decoder) Offset() int { return d.off }

// Len is how many bytes are left.
func (d *Decoder) Len() int { return len(d.b) - d.off }

// Rest returns the unread bytes.
func (d *Decoder) Rest() []byte { return d.b[d.off:] }

func (d *Decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrDecode, d.off, fmt.Sprintf(format, args...))
	}
}

// take returns the next n bytes, or fails without allocating anything
// when fewer are left.
func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail("%d bytes needed, %d left", n, len(d.b)-d.off)
		return nil
	}
	s := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return s
}

func (d *Decoder) byte1() byte {
	s := d.take(1)
	if s == nil {
		return 0
	}
	return s[0]
}

func (d *Decoder) u16() uint16 {
	if s := d.take(2); s != nil {
		return binary.BigEndian.Uint16(s)
	}
	return 0
}

func (d *Decoder) u32() uint32 {
	if s := d.take(4); s != nil {
		return binary.BigEndian.Uint32(s)
	}
	return 0
}

func (d *Decoder) u64() uint64 {
	if s := d.take(8); s != nil {
		return binary.BigEndian.Uint64(s)
	}
	return 0
}

// Peek returns the next type code without reading it (0 at the end or
// after an error).
func (d *Decoder) Peek() byte {
	if d.err != nil || d.off >= len(d.b) {
		return 0
	}
	return d.b[d.off]
}

// IsNull reads a null if one is next and says so.
func (d *Decoder) IsNull() bool {
	if d.err == nil && d.off < len(d.b) && d.b[d.off] == codeNull {
		d.off++
		return true
	}
	return false
}

// Bool reads a boolean.
func (d *Decoder) Bool() bool {
	switch c := d.byte1(); c {
	case codeTrue:
		return true
	case codeFalse:
		return false
	case codeBool:
		return d.byte1() != 0
	default:
		d.typeErr("boolean", c)
	}
	return false
}

// Ubyte reads a ubyte.
func (d *Decoder) Ubyte() uint8 {
	if c := d.byte1(); c != codeUbyte {
		d.typeErr("ubyte", c)
		return 0
	}
	return d.byte1()
}

// Ushort reads a ushort.
func (d *Decoder) Ushort() uint16 {
	if c := d.byte1(); c != codeUshort {
		d.typeErr("ushort", c)
		return 0
	}
	return d.u16()
}

// Uint reads a uint in any of its forms.
func (d *Decoder) Uint() uint32 {
	switch c := d.byte1(); c {
	case codeUint0:
		return 0
	case codeSmallUint:
		return uint32(d.byte1())
	case codeUint:
		return d.u32()
	default:
		d.typeErr("uint", c)
	}
	return 0
}

// Ulong reads a ulong in any of its forms.
func (d *Decoder) Ulong() uint64 {
	switch c := d.byte1(); c {
	case codeUlong0:
		return 0
	case codeSmallUlong:
		return uint64(d.byte1())
	case codeUlong:
		return d.u64()
	default:
		d.typeErr("ulong", c)
	}
	return 0
}

// Int reads an int in any of its forms.
func (d *Decoder) Int() int32 {
	switch c := d.byte1(); c {
	case codeSmallInt:
		return int32(int8(d.byte1()))
	case codeInt:
		return int32(d.u32())
	default:
		d.typeErr("int", c)
	}
	return 0
}

// Long reads a long in any of its forms.
func (d *Decoder) Long() int64 {
	switch c := d.byte1(); c {
	case codeSmallLong:
		return int64(int8(d.byte1()))
	case codeLong:
		return int64(d.u64())
	default:
		d.typeErr("long", c)
	}
	return 0
}

// Timestamp reads a timestamp.
func (d *Decoder) Timestamp() Timestamp {
	if c := d.byte1(); c != codeTimestamp {
		d.typeErr("timestamp", c)
		return 0
	}
	return Timestamp(d.u64())
}

// UUID reads a uuid.
func (d *Decoder) UUID() (u UUID) {
	if c := d.byte1(); c != codeUUID {
		d.typeErr("uuid", c)
		return u
	}
	copy(u[:], d.take(16))
	return u
}

// Binary reads a binary; the result aliases the input.
func (d *Decoder) Binary() []byte { return d.variable("binary", codeVbin8, codeVbin32) }

// StringBytes reads a string; the result aliases the input.
func (d *Decoder) StringBytes() []byte { return d.variable("string", codeStr8, codeStr32) }

// SymbolBytes reads a symbol; the result aliases the input.
func (d *Decoder) SymbolBytes() []byte { return d.variable("symbol", codeSym8, codeSym32) }

// String reads a string (a null reads as "").
func (d *Decoder) String() string {
	if d.IsNull() {
		return ""
	}
	return string(d.StringBytes())
}

// Symbol reads a symbol (a null reads as "").
func (d *Decoder) Symbol() string {
	if d.IsNull() {
		return ""
	}
	return string(d.SymbolBytes())
}

func (d *Decoder) variable(what string, small, large byte) []byte {
	c := d.byte1()
	var n int
	switch c {
	case small:
		n = int(d.byte1())
	case large:
		n = int(d.u32())
	default:
		d.typeErr(what, c)
		return nil
	}
	return d.take(n)
}

func (d *Decoder) typeErr(want string, got byte) {
	if d.err == nil {
		d.off--
		d.fail("%s expected, found type 0x%02x", want, got)
	}
}

// Symbols reads a symbol or an array of symbols (fields of type symbol
// with multiple=true take either); a null reads as none.
func (d *Decoder) Symbols() []string {
	if d.IsNull() {
		return nil
	}
	switch d.Peek() {
	case codeSym8, codeSym32:
		return []string{d.Symbol()}
	case codeArray8, codeArray32:
	default:
		d.typeErr("symbol array", d.byte1())
		return nil
	}
	count, end := d.compoundHeader(codeArray8, codeArray32)
	if d.err != nil {
		return nil
	}
	elem := d.byte1()
	if count > 0 && elem != codeSym8 && elem != codeSym32 {
		d.typeErr("symbol array", elem)
		return nil
	}
	out := make([]string, 0, count)
	for i := 0; i < count && d.err == nil; i++ {
		n := int(d.byte1())
		if elem == codeSym32 {
			d.off--
			n = int(d.u32())
		}
		out = append(out, string(d.take(n)))
	}
	d.expectEnd(end)
	return out
}

// compoundHeader reads the size and count of a list, map or array whose
// code is one of the two given, returns the count and the offset where
// it ends. A count larger than the bytes left is refused before the
// caller allocates for it (every element takes at least one byte).
func (d *Decoder) compoundHeader(small, large byte) (count, end int) {
	c := d.byte1()
	var size int
	switch c {
	case small:
		size = int(d.byte1())
		if size < 1 {
			d.fail("compound of size %d", size)
			return 0, 0
		}
		start := d.off
		count = int(d.byte1())
		end = start + size
	case large:
		size = int(d.u32())
		if size < 4 {
			d.fail("compound of size %d", size)
			return 0, 0
		}
		start := d.off
		count = int(d.u32())
		end = start + size
	default:
		d.typeErr("compound", c)
		return 0, 0
	}
	if d.err != nil {
		return 0, 0
	}
	if end > len(d.b) || end < d.off {
		d.fail("compound of %d bytes, %d left", size, len(d.b)-d.off+1)
		return 0, 0
	}
	if count > end-d.off+1 {
		d.fail("compound claims %d elements in %d bytes", count, end-d.off)
		return 0, 0
	}
	return count, end
}

// expectEnd checks a compound's elements ended where its size said.
func (d *Decoder) expectEnd(end int) {
	if d.err == nil && d.off != end {
		d.fail("compound's elements end at %d, its size says %d", d.off, end)
	}
}

// List reads a list header: its element count and a cursor that knows
// where it ends.
func (d *Decoder) List() ListCursor {
	switch d.Peek() {
	case codeList0:
		d.off++
		return ListCursor{end: d.off}
	case codeNull:
		d.off++
		return ListCursor{end: d.off}
	}
	count, end := d.compoundHeader(codeList8, codeList32)
	return ListCursor{n: count, end: end}
}

// ListCursor walks the fields of a list: Next says whether another is
// present; Done skips fields not read and checks the list's size.
type ListCursor struct {
	n, i, end int
}

// Next says whether another field is present.
func (l *ListCursor) Next() bool {
	if l.i < l.n {
		l.i++
		return true
	}
	return false
}

// Done skips the fields left and checks the list ended where its size
// said.
func (d *Decoder) Done(l *ListCursor) {
	for l.Next() && d.err == nil {
		d.Skip()
	}
	d.expectEnd(l.end)
}

// Map reads a map header: its count of keys and values (twice the
// pairs) and where it ends. A null reads as an empty map.
func (d *Decoder) Map() (count, end int) {
	if d.IsNull() {
		return 0, d.off
	}
	count, end = d.compoundHeader(codeMap8, codeMap32)
	if count%2 != 0 {
		d.fail("map with an odd count %d", count)
	}
	return count, end
}

// Descriptor reads the start of a described type and returns its
// numeric descriptor; symbolic descriptors of the spec's own types are
// mapped to their codes, other symbols read as ^0.
func (d *Decoder) Descriptor() uint64 {
	if c := d.byte1(); c != codeDescribed {
		d.typeErr("described type", c)
		return 0
	}
	switch d.Peek() {
	case codeSym8, codeSym32:
		return symbolicDescriptor(d.SymbolBytes())
	}
	return d.Ulong()
}

// Skip reads over one value of any type, checking its sizes.
func (d *Decoder) Skip() {
	if d.err != nil {
		return
	}
	c := d.byte1()
	if d.err != nil {
		return
	}
	if c == codeDescribed {
		d.depth++
		if d.depth > MaxDepth {
			d.fail("values nested deeper than %d", MaxDepth)
			return
		}
		d.Skip()
		d.Skip()
		d.depth--
		return
	}
	var n int
	switch c >> 4 {
	case 0x4:
	case 0x5:
		n = 1
	case 0x6:
		n = 2
	case 0x7:
		n = 4
	case 0x8:
		n = 8
	case 0x9:
		n = 16
	case 0xa, 0xc, 0xe:
		n = int(d.byte1())
	case 0xb, 0xd, 0xf:
		n = int(d.u32())
	default:
		d.off--
		d.fail("unknown type code 0x%02x", c)
		return
	}
	if !knownCode(c) {
		d.off--
		d.fail("unknown type code 0x%02x", c)
		return
	}
	d.take(n)
}

func knownCode(c byte) bool {
	switch c {
	case codeNull, codeTrue, codeFalse, codeUint0, codeUlong0, codeList0,
		codeUbyte, codeByte, codeSmallUint, codeSmallUlong, codeSmallInt, codeSmallLong, codeBool,
		codeUshort, codeShort, codeUint, codeInt, codeFloat, codeChar, codeDecimal32,
		codeUlong, codeLong, codeDouble, codeTimestamp, codeDecimal64, codeDecimal128, codeUUID,
		codeVbin8, codeStr8, codeSym8, codeVbin32, codeStr32, codeSym32,
		codeList8, codeMap8, codeList32, codeMap32, codeArray8, codeArray32:
		return true
	}
	return false
}

// Raw reads over one value and returns its encoded bytes (aliasing the
// input), to carry a field as it came.
func (d *Decoder) Raw() []byte {
	start := d.off
	d.Skip()
	if d.err != nil {
		return nil
	}
	return d.b[start:d.off:d.off]
}

// float helpers for Value.
func f32(u uint32) float32 { return math.Float32frombits(u) }
func f64(u uint64) float64 { return math.Float64frombits(u) }
