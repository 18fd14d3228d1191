package wire

import "fmt"

// The properties section (part 3.2.4) is the bare message's first
// section when present: a described list whose fourth field is the
// subject. A router that publishes into an exchange routing by subject
// (qpidd) sets it on every message it sends there; the rest of the bare
// message is carried as it came.

// propertiesSubject is the subject's index among the properties' fields.
const propertiesSubject = 3

// AppendBareWithSubject appends to dst the bare message bare (a
// payload from Sections.Bare on) with its properties' subject set to
// subject: the other fields and every other section are copied as they
// are, never decoded; a message without a properties section is given
// one holding only the subject. A properties section that does not
// decode (not a list, a field that does not parse, a subject that is
// neither a string nor null, a size that lies) is refused with an error
// wrapping ErrDecode that names it, and dst comes back as it was.
func AppendBareWithSubject(dst, bare []byte, subject string) ([]byte, error) {
	start := len(dst)
	d := NewDecoder(bare)
	if d.Len() == 0 || d.Peek() != codeDescribed {
		if d.Len() > 0 {
			return dst, fmt.Errorf("%w: bare message at byte 0: a section must be a described type, found 0x%02x", ErrDecode, d.Peek())
		}
		return appendProperties(dst, nil, 0, subject), nil
	}
	if desc := d.Descriptor(); d.err != nil || desc != DescProperties {
		if d.err != nil {
			return dst, fmt.Errorf("bare message: %w", d.err)
		}
		// No properties section: one goes first, the rest follows as is.
		return append(appendProperties(dst, nil, 0, subject), bare...), nil
	}
	fields, n, err := propertiesFields(&d)
	if err != nil {
		return dst[:start], fmt.Errorf("properties section: %w", err)
	}
	dst = appendProperties(dst, fields, n, subject)
	return append(dst, bare[d.off:]...), nil
}

// propertiesFields reads the properties list after its descriptor and
// returns its fields' bytes (the list's body) and their count, having
// checked every field parses, the count and size agree, and the subject
// (when present) is a string or null.
func propertiesFields(d *Decoder) ([]byte, int, error) {
	if c := d.Peek(); c == codeList0 || c == codeNull { // null: no fields, as Decoder.List reads it
		d.off++
		return nil, 0, d.err
	}
	if c := d.Peek(); c != codeList8 && c != codeList32 {
		return nil, 0, fmt.Errorf("%w: at byte %d: a list must follow the descriptor, found 0x%02x", ErrDecode, d.off, c)
	}
	count, end := d.compoundHeader(codeList8, codeList32)
	first := d.off
	for i := 0; i < count && d.err == nil; i++ {
		if c := d.Peek(); i == propertiesSubject && d.off < end && c != codeStr8 && c != codeStr32 && c != codeNull {
			d.fail("the subject is of type 0x%02x: a string or null is wanted", c)
		}
		d.Skip()
	}
	d.expectEnd(end)
	if d.err != nil {
		return nil, 0, d.err
	}
	return d.b[first:end], count, nil
}

// appendProperties appends a properties section with the n fields
// encoded in fields and the subject set: fields before it kept, nulls
// added up to it when the list was shorter, fields after it kept. The
// fields were checked by propertiesFields.
func appendProperties(dst, fields []byte, n int, subject string) []byte {
	dst = AppendDescriptor(dst, DescProperties)
	dst, mark := BeginList(dst)
	d := NewDecoder(fields)
	for i := 0; i < propertiesSubject; i++ {
		if i < n {
			dst = append(dst, d.Raw()...)
		} else {
			dst = AppendNull(dst)
		}
	}
	if n > propertiesSubject {
		d.Skip() // the old subject
	}
	dst = AppendString(dst, subject)
	dst = append(dst, d.Rest()...)
	return EndList(dst, mark, max(n, propertiesSubject+1))
}

// AppendRewrittenWithSubject is AppendRewritten with the bare message's
// subject set as AppendBareWithSubject sets it; on its error dst comes
// back as it was.
func AppendRewrittenWithSubject(dst, payload []byte, s *Sections, dropDelivery bool, subject string, set ...Annotated) ([]byte, error) {
	start := len(dst)
	dst = appendLeading(dst, payload, s, dropDelivery, set)
	out, err := AppendBareWithSubject(dst, payload[s.Bare:], subject)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}
