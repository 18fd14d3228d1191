package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Symbol is an AMQP symbol (ASCII), distinct from a string on the wire.
type Symbol string

// UUID is an AMQP uuid.
type UUID [16]byte

// Timestamp is an AMQP timestamp: milliseconds since the Unix epoch.
type Timestamp int64

// Described is a described value: a descriptor (a ulong or a Symbol) and
// its value.
type Described struct {
	Descriptor any
	Value      any
}

// Map is an AMQP map decoded generically: its pairs in wire order (AMQP
// maps are ordered and their keys need not be comparable in Go).
type Map []Pair

// Pair is one key and value of a Map.
type Pair struct{ Key, Value any }

// Array is an AMQP array: every element has the same type.
type Array []any

// AppendNull appends a null.
func AppendNull(b []byte) []byte { return append(b, codeNull) }

// AppendBool appends a boolean in its one-byte form.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, codeTrue)
	}
	return append(b, codeFalse)
}

// AppendUbyte appends a ubyte.
func AppendUbyte(b []byte, v uint8) []byte { return append(b, codeUbyte, v) }

// AppendUshort appends a ushort.
func AppendUshort(b []byte, v uint16) []byte {
	return binary.BigEndian.AppendUint16(append(b, codeUshort), v)
}

// AppendUint appends a uint in its smallest form.
func AppendUint(b []byte, v uint32) []byte {
	switch {
	case v == 0:
		return append(b, codeUint0)
	case v < 256:
		return append(b, codeSmallUint, byte(v))
	}
	return binary.BigEndian.AppendUint32(append(b, codeUint), v)
}

// AppendUlong appends a ulong in its smallest form.
func AppendUlong(b []byte, v uint64) []byte {
	switch {
	case v == 0:
		return append(b, codeUlong0)
	case v < 256:
		return append(b, codeSmallUlong, byte(v))
	}
	return binary.BigEndian.AppendUint64(append(b, codeUlong), v)
}

// AppendInt appends an int in its smallest form.
func AppendInt(b []byte, v int32) []byte {
	if v >= -128 && v <= 127 {
		return append(b, codeSmallInt, byte(int8(v)))
	}
	return binary.BigEndian.AppendUint32(append(b, codeInt), uint32(v))
}

// AppendLong appends a long in its smallest form.
func AppendLong(b []byte, v int64) []byte {
	if v >= -128 && v <= 127 {
		return append(b, codeSmallLong, byte(int8(v)))
	}
	return binary.BigEndian.AppendUint64(append(b, codeLong), uint64(v))
}

// AppendTimestamp appends a timestamp.
func AppendTimestamp(b []byte, v Timestamp) []byte {
	return binary.BigEndian.AppendUint64(append(b, codeTimestamp), uint64(v))
}

// AppendUUID appends a uuid.
func AppendUUID(b []byte, v UUID) []byte { return append(append(b, codeUUID), v[:]...) }

// AppendBinary appends a binary in its smallest form.
func AppendBinary(b []byte, v []byte) []byte {
	return append(appendVarHeader(b, codeVbin8, codeVbin32, len(v)), v...)
}

// AppendString appends a UTF-8 string in its smallest form.
func AppendString(b []byte, v string) []byte {
	return append(appendVarHeader(b, codeStr8, codeStr32, len(v)), v...)
}

// AppendStringBytes is AppendString for UTF-8 held in a byte slice
// (no conversion to a string, no allocation).
func AppendStringBytes(b []byte, v []byte) []byte {
	return append(appendVarHeader(b, codeStr8, codeStr32, len(v)), v...)
}

// AppendSymbol appends a symbol in its smallest form.
func AppendSymbol(b []byte, v string) []byte {
	return append(appendVarHeader(b, codeSym8, codeSym32, len(v)), v...)
}

func appendVarHeader(b []byte, small, large byte, n int) []byte {
	if n < 256 {
		return append(b, small, byte(n))
	}
	return binary.BigEndian.AppendUint32(append(b, large), uint32(n))
}

// AppendDescriptor appends the start of a described type with a numeric
// descriptor; the described value follows.
func AppendDescriptor(b []byte, code uint64) []byte {
	return AppendUlong(append(b, codeDescribed), code)
}

// AppendSymbolArray appends an array of symbols (an empty list is a
// null: the fields that take symbol arrays all default to empty).
func AppendSymbolArray(b []byte, syms []string) []byte {
	if len(syms) == 0 {
		return AppendNull(b)
	}
	b, mark := BeginArray(b)
	b = append(b, codeSym32)
	for _, s := range syms {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return EndArray(b, mark, len(syms))
}

// Compound marks where a list, map or array started in a buffer, so its
// size and count can be filled in once its elements are appended.
type Compound int

// BeginList starts a list; append its elements, then call EndList.
func BeginList(b []byte) ([]byte, Compound) {
	return beginCompound(b, codeList32)
}

// BeginMap starts a map; append keys and values, then EndMap.
func BeginMap(b []byte) ([]byte, Compound) {
	return beginCompound(b, codeMap32)
}

// BeginArray starts an array; append the element constructor once, then
// the elements without constructors, then EndArray.
func BeginArray(b []byte) ([]byte, Compound) {
	return beginCompound(b, codeArray32)
}

func beginCompound(b []byte, code byte) ([]byte, Compound) {
	mark := Compound(len(b))
	return append(b, code, 0, 0, 0, 0, 0, 0, 0, 0), mark
}

// EndList completes a list of count elements, in its smallest form.
func EndList(b []byte, mark Compound, count int) []byte {
	if count == 0 {
		return append(b[:mark], codeList0)
	}
	return endCompound(b, mark, count, codeList8)
}

// EndMap completes a map of count keys and values (2 per pair).
func EndMap(b []byte, mark Compound, count int) []byte {
	return endCompound(b, mark, count, codeMap8)
}

// EndArray completes an array of count elements.
func EndArray(b []byte, mark Compound, count int) []byte {
	return endCompound(b, mark, count, codeArray8)
}

// endCompound fills in the 32-bit size and count, or moves the elements
// down to the 8-bit form when they fit: most performatives are small.
func endCompound(b []byte, mark Compound, count int, small byte) []byte {
	start := int(mark)
	body := len(b) - start - 9
	if body+1 < 256 && count < 256 {
		b[start] = small
		b[start+1] = byte(body + 1)
		b[start+2] = byte(count)
		copy(b[start+3:], b[start+9:])
		return b[:len(b)-6]
	}
	binary.BigEndian.PutUint32(b[start+1:], uint32(body+4))
	binary.BigEndian.PutUint32(b[start+5:], uint32(count))
	return b
}

// AppendValue appends a Go value in its AMQP form: nil, bool, the sized
// integers, float32/64, string, Symbol, []byte, Timestamp, UUID, Map,
// []any (a list), Array, Described. Other types are an error.
func AppendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return AppendNull(b), nil
	case bool:
		return AppendBool(b, v), nil
	case uint8:
		return AppendUbyte(b, v), nil
	case uint16:
		return AppendUshort(b, v), nil
	case uint32:
		return AppendUint(b, v), nil
	case uint64:
		return AppendUlong(b, v), nil
	case int8:
		return append(b, codeByte, byte(v)), nil
	case int16:
		return binary.BigEndian.AppendUint16(append(b, codeShort), uint16(v)), nil
	case int32:
		return AppendInt(b, v), nil
	case int64:
		return AppendLong(b, v), nil
	case int:
		return AppendLong(b, int64(v)), nil
	case float32:
		return binary.BigEndian.AppendUint32(append(b, codeFloat), math.Float32bits(v)), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(b, codeDouble), math.Float64bits(v)), nil
	case string:
		return AppendString(b, v), nil
	case Symbol:
		return AppendSymbol(b, string(v)), nil
	case []byte:
		return AppendBinary(b, v), nil
	case Timestamp:
		return AppendTimestamp(b, v), nil
	case UUID:
		return AppendUUID(b, v), nil
	}
	return appendCompoundValue(b, v)
}

func appendCompoundValue(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case Map:
		b, mark := BeginMap(b)
		for _, p := range v {
			if b, err = AppendValue(b, p.Key); err != nil {
				return b, err
			}
			if b, err = AppendValue(b, p.Value); err != nil {
				return b, err
			}
		}
		return EndMap(b, mark, 2*len(v)), nil
	case []any:
		b, mark := BeginList(b)
		for _, e := range v {
			if b, err = AppendValue(b, e); err != nil {
				return b, err
			}
		}
		return EndList(b, mark, len(v)), nil
	case Array:
		return appendArray(b, v)
	case Described:
		b = append(b, codeDescribed)
		if b, err = AppendValue(b, v.Descriptor); err != nil {
			return b, err
		}
		return AppendValue(b, v.Value)
	}
	return b, fmt.Errorf("wire: cannot encode a %T", v)
}

// appendArray encodes each element with its full constructor, checks
// they share one, and keeps the first constructor only. Elements are
// encoded in their widest form so the constructors agree.
func appendArray(b []byte, v Array) ([]byte, error) {
	b, mark := BeginArray(b)
	if len(v) == 0 {
		return EndArray(append(b, codeNull), mark, 0), nil
	}
	var code byte
	for i, e := range v {
		elem, err := appendWide(nil, e)
		if err != nil {
			return b, err
		}
		if i == 0 {
			code = elem[0]
			b = append(b, code)
		} else if elem[0] != code {
			return b, fmt.Errorf("wire: array element %d is of type 0x%02x, the array's is 0x%02x", i, elem[0], code)
		}
		b = append(b, elem[1:]...)
	}
	return EndArray(b, mark, len(v)), nil
}

// appendWide encodes the fixed-width form of the variable-width scalars
// (arrays need one constructor for all elements).
func appendWide(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case uint32:
		return binary.BigEndian.AppendUint32(append(b, codeUint), v), nil
	case uint64:
		return binary.BigEndian.AppendUint64(append(b, codeUlong), v), nil
	case int32:
		return binary.BigEndian.AppendUint32(append(b, codeInt), uint32(v)), nil
	case int64:
		return binary.BigEndian.AppendUint64(append(b, codeLong), uint64(v)), nil
	case bool:
		if v {
			return append(b, codeBool, 1), nil
		}
		return append(b, codeBool, 0), nil
	case string:
		return append(binary.BigEndian.AppendUint32(append(b, codeStr32), uint32(len(v))), v...), nil
	case Symbol:
		return append(binary.BigEndian.AppendUint32(append(b, codeSym32), uint32(len(v))), v...), nil
	case []byte:
		return append(binary.BigEndian.AppendUint32(append(b, codeVbin32), uint32(len(v))), v...), nil
	}
	return AppendValue(b, v)
}
