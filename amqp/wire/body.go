package wire

import "fmt"

// DataBody returns the body of a message whose bare message is
// properties and application-properties (both optional), one or more
// data sections, and an optional footer (part 3.2): the data sections'
// bytes, joined. Any other body (amqp-value, amqp-sequence, none) or a
// section out of its place is an error naming it and its byte offset.
// With one data section the result is a slice of payload, not a copy.
func DataBody(payload []byte) ([]byte, error) {
	s, err := ScanSections(payload)
	if err != nil {
		return nil, err
	}
	d := NewDecoder(payload[s.Bare:])
	var parts [][]byte
	last := uint64(0)
	for d.Len() > 0 {
		at := s.Bare + d.off
		desc := d.Descriptor()
		if d.err != nil {
			return nil, d.err
		}
		switch {
		case desc == DescData && last <= DescData:
			parts = append(parts, d.Binary())
		case (desc == DescProperties || desc == DescApplicationProperties) && desc > last,
			desc == DescFooter && last == DescData:
			d.Skip()
		default:
			return nil, fmt.Errorf("%w: at byte %d: section %s where a data body was expected", ErrDecode, at, sectionName(desc))
		}
		if d.err != nil {
			return nil, d.err
		}
		last = desc
	}
	switch len(parts) {
	case 0:
		return nil, fmt.Errorf("%w: the message has no data section", ErrDecode)
	case 1:
		return parts[0], nil
	}
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	return body, nil
}

func sectionName(desc uint64) string {
	names := map[uint64]string{DescHeader: "header", DescDeliveryAnnotations: "delivery-annotations",
		DescMessageAnnotations: "message-annotations", DescProperties: "properties",
		DescApplicationProperties: "application-properties", DescData: "data", DescAMQPSequence: "amqp-sequence",
		DescAMQPValue: "amqp-value", DescFooter: "footer"}
	if n, ok := names[desc]; ok {
		return n
	}
	return fmt.Sprintf("0x%x", desc)
}
