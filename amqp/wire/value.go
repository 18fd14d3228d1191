package wire

import "encoding/binary"

// symbolic descriptors of the types this package knows (part 2 to 5 give
// each a symbol and a code; peers may send either).
var symbolic = map[string]uint64{
	"amqp:open:list": DescOpen, "amqp:begin:list": DescBegin, "amqp:attach:list": DescAttach,
	"amqp:flow:list": DescFlow, "amqp:transfer:list": DescTransfer, "amqp:disposition:list": DescDisposition,
	"amqp:detach:list": DescDetach, "amqp:end:list": DescEnd, "amqp:close:list": DescClose,
	"amqp:error:list": DescError, "amqp:received:list": DescReceived, "amqp:accepted:list": DescAccepted,
	"amqp:rejected:list": DescRejected, "amqp:released:list": DescReleased, "amqp:modified:list": DescModified,
	"amqp:source:list": DescSource, "amqp:target:list": DescTarget,
	"amqp:sasl-mechanisms:list": DescSASLMechanisms, "amqp:sasl-init:list": DescSASLInit,
	"amqp:sasl-challenge:list": DescSASLChallenge, "amqp:sasl-response:list": DescSASLResponse,
	"amqp:sasl-outcome:list": DescSASLOutcome,
	"amqp:header:list":       DescHeader, "amqp:delivery-annotations:map": DescDeliveryAnnotations,
	"amqp:message-annotations:map": DescMessageAnnotations, "amqp:properties:list": DescProperties,
	"amqp:application-properties:map": DescApplicationProperties, "amqp:data:binary": DescData,
	"amqp:amqp-sequence:list": DescAMQPSequence, "amqp:amqp-value:*": DescAMQPValue,
	"amqp:footer:map": DescFooter,
}

// UnknownDescriptor is what Descriptor returns for a symbolic descriptor
// this package does not know.
const UnknownDescriptor = ^uint64(0)

func symbolicDescriptor(s []byte) uint64 {
	if c, ok := symbolic[string(s)]; ok {
		return c
	}
	return UnknownDescriptor
}

// Value reads any value into Go types: nil, bool, uint8..uint64,
// int8..int64, float32/64, rune (char), string, Symbol, []byte (a copy),
// Timestamp, UUID, []any (list), Map, Array, Described. decimal32/64/128
// read as their raw bytes in a Described with descriptor "decimalNN", so
// a value this package cannot represent is still carried, never refused.
func (d *Decoder) Value() any {
	if d.err != nil {
		return nil
	}
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > MaxDepth {
		d.fail("values nested deeper than %d", MaxDepth)
		return nil
	}
	switch c := d.Peek(); c {
	case codeDescribed:
		d.off++
		desc := d.Value()
		return Described{Descriptor: desc, Value: d.Value()}
	case codeList0, codeList8, codeList32:
		return d.listValue()
	case codeMap8, codeMap32:
		return d.mapValue()
	case codeArray8, codeArray32:
		return d.arrayValue()
	case codeVbin8, codeVbin32:
		return append([]byte{}, d.Binary()...)
	case codeStr8, codeStr32:
		return string(d.StringBytes())
	case codeSym8, codeSym32:
		return Symbol(d.SymbolBytes())
	}
	return d.scalar(d.byte1())
}

func (d *Decoder) scalar(c byte) any {
	switch c {
	case codeNull:
		return nil
	case codeTrue, codeFalse, codeBool:
		d.off--
		return d.Bool()
	case codeUbyte:
		return d.byte1()
	case codeByte:
		return int8(d.byte1())
	case codeUshort:
		return d.u16()
	case codeShort:
		return int16(d.u16())
	case codeUint0, codeSmallUint, codeUint:
		d.off--
		return d.Uint()
	case codeUlong0, codeSmallUlong, codeUlong:
		d.off--
		return d.Ulong()
	case codeSmallInt, codeInt:
		d.off--
		return d.Int()
	case codeSmallLong, codeLong:
		d.off--
		return d.Long()
	case codeFloat:
		return f32(d.u32())
	case codeDouble:
		return f64(d.u64())
	case codeChar:
		return rune(d.u32())
	case codeTimestamp:
		return Timestamp(d.u64())
	case codeUUID:
		var u UUID
		copy(u[:], d.take(16))
		return u
	case codeDecimal32:
		return Described{Descriptor: Symbol("decimal32"), Value: append([]byte{}, d.take(4)...)}
	case codeDecimal64:
		return Described{Descriptor: Symbol("decimal64"), Value: append([]byte{}, d.take(8)...)}
	case codeDecimal128:
		return Described{Descriptor: Symbol("decimal128"), Value: append([]byte{}, d.take(16)...)}
	}
	d.off--
	d.fail("unknown type code 0x%02x", c)
	return nil
}

func (d *Decoder) listValue() any {
	l := d.List()
	out := make([]any, 0, l.n)
	for l.Next() && d.err == nil {
		out = append(out, d.Value())
	}
	d.expectEnd(l.end)
	return out
}

func (d *Decoder) mapValue() any {
	count, end := d.Map()
	out := make(Map, 0, count/2)
	for i := 0; i < count/2 && d.err == nil; i++ {
		k := d.Value()
		out = append(out, Pair{Key: k, Value: d.Value()})
	}
	d.expectEnd(end)
	return out
}

// arrayValue reads an array by re-reading each element as if it carried
// the array's constructor, so every element type is handled once.
func (d *Decoder) arrayValue() any {
	count, end := d.compoundHeader(codeArray8, codeArray32)
	if d.err != nil {
		return nil
	}
	ctor := d.off
	if d.byte1() == codeDescribed {
		d.Skip()
	}
	ctorBytes := d.b[ctor:d.off]
	out := make(Array, 0, count)
	for i := 0; i < count && d.err == nil; i++ {
		elemStart := d.off
		n := d.elementSize(ctorBytes[len(ctorBytes)-1])
		body := d.take(n)
		if d.err != nil {
			break
		}
		one := make([]byte, 0, len(ctorBytes)+len(body))
		sub := NewDecoder(append(append(one, ctorBytes...), body...))
		sub.depth = d.depth
		out = append(out, sub.Value())
		if sub.err != nil {
			d.off = elemStart
			d.fail("array element %d: %v", i, sub.err)
		}
	}
	d.expectEnd(end)
	return out
}

// elementSize is the encoded size of an array element (without its
// constructor) of type code c, reading the element's size prefix for
// variable and compound types without consuming it.
func (d *Decoder) elementSize(c byte) int {
	rest := d.b[d.off:]
	switch c >> 4 {
	case 0x4:
		return 0
	case 0x5:
		return 1
	case 0x6:
		return 2
	case 0x7:
		return 4
	case 0x8:
		return 8
	case 0x9:
		return 16
	case 0xa, 0xc, 0xe:
		if len(rest) < 1 {
			return 1
		}
		return 1 + int(rest[0])
	case 0xb, 0xd, 0xf:
		if len(rest) < 4 {
			return 4
		}
		return 4 + int(binary.BigEndian.Uint32(rest))
	}
	d.fail("unknown array element type 0x%02x", c)
	return 0
}
