package wire

import "fmt"

// Span is a byte range [Start, End) of a payload; empty when absent.
type Span struct{ Start, End int }

// Present says whether the span holds a section.
func (s Span) Present() bool { return s.End > s.Start }

// Sections is where a message's leading sections sit in a transfer's
// payload (part 3.2): the header, the delivery annotations and the
// message annotations, and where the bare message begins. The bare
// message is not decoded.
type Sections struct {
	Header              Span
	DeliveryAnnotations Span
	MessageAnnotations  Span
	annotationsMap      Span // the map inside MessageAnnotations
	Bare                int
}

// ScanSections finds the sections before the bare message. Annotation
// keys must be symbols or ulongs (part 3.2.10, 3.2.3): any other key is
// an error naming the section and the key's type.
func ScanSections(payload []byte) (Sections, error) {
	s, _, err := scanSections(payload, false)
	return s, err
}

// ScanSectionsLenient is ScanSections for a message that is to be kept
// whole whatever its annotations hold (a dead-letter queue's): an
// annotations section whose keys break the rule is still located, and
// badAnnotations says the message annotations did (a delivery
// annotations section that did is dropped on the way on anyway). Other
// errors (a section that does not parse at all) are returned.
func ScanSectionsLenient(payload []byte) (s Sections, badAnnotations bool, err error) {
	return scanSections(payload, true)
}

func scanSections(payload []byte, lenient bool) (Sections, bool, error) {
	var s Sections
	bad := false
	d := NewDecoder(payload)
	last := uint64(0)
	for d.Len() > 0 {
		start := d.off
		if d.Peek() != codeDescribed {
			return s, bad, fmt.Errorf("%w: at byte %d: a message section must be a described type, found 0x%02x", ErrDecode, start, d.Peek())
		}
		desc := d.Descriptor()
		if d.err != nil {
			return s, bad, d.err
		}
		if desc < DescHeader || desc > DescMessageAnnotations {
			s.Bare = start
			return s, bad, nil
		}
		if desc <= last {
			return s, bad, fmt.Errorf("%w: at byte %d: section 0x%x out of order or repeated", ErrDecode, start, desc)
		}
		last = desc
		valueStart := d.off
		if desc == DescHeader {
			d.Skip()
		} else {
			d.annotationKeys(desc)
		}
		if d.err != nil && lenient && desc != DescHeader {
			// Read over it again without the key rule.
			d.err, d.off, d.depth = nil, valueStart, 0
			d.Skip()
			bad = bad || desc == DescMessageAnnotations && d.err == nil
		}
		if d.err != nil {
			return s, bad, d.err
		}
		span := Span{start, d.off}
		switch desc {
		case DescHeader:
			s.Header = span
		case DescDeliveryAnnotations:
			s.DeliveryAnnotations = span
		case DescMessageAnnotations:
			s.MessageAnnotations = span
			s.annotationsMap = Span{valueStart, d.off}
		}
	}
	s.Bare = len(payload)
	return s, bad, nil
}

// annotationKeys reads over an annotations map, checking every key.
func (d *Decoder) annotationKeys(desc uint64) {
	count, end := d.Map()
	for i := 0; i < count/2 && d.err == nil; i++ {
		switch c := d.Peek(); c {
		case codeSym8, codeSym32, codeUlong0, codeSmallUlong, codeUlong:
		default:
			name := "message-annotations"
			if desc == DescDeliveryAnnotations {
				name = "delivery-annotations"
			}
			d.fail("%s key %d is of type 0x%02x: keys must be symbols or ulongs (part 3.2)", name, i, c)
			return
		}
		d.Skip()
		d.Skip()
	}
	d.expectEnd(end)
}

// Annotation returns the encoded value of the message annotation with
// symbol key, aliasing payload.
func (s *Sections) Annotation(payload []byte, key string) ([]byte, bool) {
	if !s.MessageAnnotations.Present() {
		return nil, false
	}
	d := NewDecoder(payload[:s.annotationsMap.End])
	d.off = s.annotationsMap.Start
	return d.findInMap(func(k []byte) bool { return symbolIs(k, key) })
}

// findInMap reads a map and returns the encoded value of the first key
// that matches.
func (d *Decoder) findInMap(match func(key []byte) bool) ([]byte, bool) {
	count, _ := d.Map()
	for i := 0; i < count/2 && d.err == nil; i++ {
		k := d.Raw()
		v := d.Raw()
		if d.err == nil && match(k) {
			return v, true
		}
	}
	return nil, false
}

func symbolIs(enc []byte, key string) bool {
	switch {
	case len(enc) >= 2 && enc[0] == codeSym8:
		return string(enc[2:]) == key
	case len(enc) >= 5 && enc[0] == codeSym32:
		return string(enc[5:]) == key
	}
	return false
}

// Annotated is one message annotation to set: a symbol key and its
// value already encoded (AppendUint, AppendString, ...); a nil Value
// removes the annotation.
type Annotated struct {
	Key   string
	Value []byte
}

// AppendRewritten appends to dst the payload with its message
// annotations set (each key added, or replaced where present) and,
// when dropDelivery, its delivery annotations left out (they are for
// one hop only). The header and the bare message are copied as they
// are, never decoded. s must come from ScanSections(payload).
func AppendRewritten(dst, payload []byte, s *Sections, dropDelivery bool, set ...Annotated) []byte {
	return append(appendLeading(dst, payload, s, dropDelivery, set), payload[s.Bare:]...)
}

// appendLeading appends the sections before the bare message as
// AppendRewritten writes them.
func appendLeading(dst, payload []byte, s *Sections, dropDelivery bool, set []Annotated) []byte {
	dst = append(dst, payload[s.Header.Start:s.Header.End]...)
	if !dropDelivery {
		dst = append(dst, payload[s.DeliveryAnnotations.Start:s.DeliveryAnnotations.End]...)
	}
	if len(set) == 0 {
		return append(dst, payload[s.MessageAnnotations.Start:s.MessageAnnotations.End]...)
	}
	dst = AppendDescriptor(dst, DescMessageAnnotations)
	dst, mark := BeginMap(dst)
	n := 0
	if s.MessageAnnotations.Present() {
		d := NewDecoder(payload[:s.annotationsMap.End])
		d.off = s.annotationsMap.Start
		count, _ := d.Map()
		for i := 0; i < count/2 && d.err == nil; i++ {
			k := d.Raw()
			v := d.Raw()
			if d.err != nil || replaced(k, set) {
				continue
			}
			dst = append(append(dst, k...), v...)
			n += 2
		}
	}
	for _, a := range set {
		if a.Value == nil {
			continue
		}
		dst = append(AppendSymbol(dst, a.Key), a.Value...)
		n += 2
	}
	return EndMap(dst, mark, n)
}

func replaced(k []byte, set []Annotated) bool {
	for _, a := range set {
		if symbolIs(k, a.Key) {
			return true
		}
	}
	return false
}

// ApplicationProperty returns the encoded value of the application
// property key (a string key, part 3.2.5), aliasing payload: the bare
// message's properties section is skipped, the application-properties
// map read, nothing else. s must come from ScanSections(payload).
func (s *Sections) ApplicationProperty(payload []byte, key string) ([]byte, bool) {
	d := NewDecoder(payload[s.Bare:])
	for d.Len() > 0 && d.err == nil {
		desc := d.Descriptor()
		switch desc {
		case DescProperties:
			d.Skip()
			continue
		case DescApplicationProperties:
		default:
			return nil, false
		}
		return d.findInMap(func(k []byte) bool { return stringIs(k, key) })
	}
	return nil, false
}

func stringIs(enc []byte, key string) bool {
	switch {
	case len(enc) >= 2 && enc[0] == codeStr8:
		return string(enc[2:]) == key
	case len(enc) >= 5 && enc[0] == codeStr32:
		return string(enc[5:]) == key
	}
	return false
}
