package links

import (
	"bytes"
	"fmt"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// The routers' hop annotations read from a message as bytes, for the
// engine data path (a per-message hook, engine.ForwardOptions.Dispatch),
// with checkAnnotations' bounds, without decoding the message or
// allocating.

// HopAnnotations are a message's origin and trace as they came: each
// aliases the payload, nil when absent (or null, or empty: the same to a
// router).
type HopAnnotations struct {
	Origin, Trace []byte
}

// ReadHop reads AnnotationOrigin and AnnotationTrace from payload, whose
// sections s locates (wire.ScanSections). Each, when present, must be a
// string within MaxAnnotationLen and the trace must name at most
// MaxTraceLen brokers: anything else is a *FieldError (checkAnnotations'
// rules), and the message is to be refused,
// never forwarded on what it claims.
func ReadHop(payload []byte, s *wire.Sections) (HopAnnotations, error) {
	var h HopAnnotations
	var err error
	if h.Origin, err = stringAnnotation(payload, s, AnnotationOrigin); err != nil {
		return h, err
	}
	if h.Trace, err = stringAnnotation(payload, s, AnnotationTrace); err != nil {
		return h, err
	}
	if n := bytes.Count(h.Trace, comma) + 1; len(h.Trace) > 0 && n > MaxTraceLen {
		return h, &FieldError{Field: "annotation " + AnnotationTrace, Problem: fmt.Sprintf("names %d brokers, at most %d", n, MaxTraceLen)}
	}
	return h, nil
}

var comma = []byte{','}

// stringAnnotation reads the string annotation key, checked as
// checkString does.
func stringAnnotation(payload []byte, s *wire.Sections, key string) ([]byte, error) {
	v, ok := s.Annotation(payload, key)
	if !ok {
		return nil, nil
	}
	d := wire.NewDecoder(v)
	if d.IsNull() {
		return nil, nil
	}
	str := d.StringBytes()
	if d.Err() != nil {
		return nil, &FieldError{Field: "annotation " + key, Problem: fmt.Sprintf("want a string, got AMQP type 0x%02x", v[0])}
	}
	if len(str) > MaxAnnotationLen {
		return nil, &FieldError{Field: "annotation " + key, Problem: fmt.Sprintf("%d bytes, at most %d", len(str), MaxAnnotationLen)}
	}
	if len(str) == 0 {
		return nil, nil
	}
	return str, nil
}

// TraceHas says whether trace (AnnotationTrace's comma-separated
// brokers) names broker.
func TraceHas(trace []byte, broker string) bool {
	for len(trace) > 0 {
		name := trace
		if i := bytes.IndexByte(trace, ','); i >= 0 {
			name, trace = trace[:i], trace[i+1:]
		} else {
			trace = nil
		}
		if string(name) == broker {
			return true
		}
	}
	return false
}

// AppendTraceValue appends the encoded value of AnnotationTrace for
// trace with broker added at its end (as a hop records the broker it
// leaves); scratch is a buffer to reuse, returned grown.
func AppendTraceValue(dst, scratch, trace []byte, broker string) (value, scratchOut []byte) {
	scratch = append(scratch[:0], trace...)
	if len(trace) > 0 {
		scratch = append(scratch, ',')
	}
	scratch = append(scratch, broker...)
	return wire.AppendStringBytes(dst, scratch), scratch
}
