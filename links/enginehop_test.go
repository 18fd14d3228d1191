package links

import (
	"errors"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// hopPayload is a message whose message annotations are m, with a data
// section.
func hopPayload(t testing.TB, m wire.Map) []byte {
	t.Helper()
	b := wire.AppendDescriptor(nil, wire.DescMessageAnnotations)
	b, err := wire.AppendValue(b, m)
	if err != nil {
		t.Fatal(err)
	}
	return wire.AppendBinary(wire.AppendDescriptor(b, wire.DescData), []byte("body"))
}

// TraceHas matches whole names only, and AppendTraceValue adds one at
// the end (or starts the trace).
func TestTraceBytes(t *testing.T) {
	for _, c := range []struct {
		trace, broker string
		has           bool
	}{
		{"", "a", false}, {"a", "a", true}, {"ab,b", "a", false}, {"b,a", "a", true}, {"a,,b", "", true}, {"x,abc", "bc", false},
	} {
		if got := TraceHas([]byte(c.trace), c.broker); got != c.has {
			t.Errorf("TraceHas(%q, %q) = %v", c.trace, c.broker, got)
		}
	}
	for trace, want := range map[string]string{"": "z", "a,b": "a,b,z"} {
		v, _ := AppendTraceValue(nil, nil, []byte(trace), "z")
		if d := wire.NewDecoder(v); d.String() != want || d.Err() != nil {
			t.Errorf("AppendTraceValue(%q): % x", trace, v)
		}
	}
}

// ReadHop's bounds are CheckAnnotations': at the limits a value passes,
// one past them is a *FieldError naming the annotation.
func TestReadHopBounds(t *testing.T) {
	names := strings.TrimSuffix(strings.Repeat("x,", MaxTraceLen), ",")
	for _, c := range []struct {
		name  string
		key   string
		value any
		ok    bool
	}{
		{"origin at the limit", AnnotationOrigin, strings.Repeat("o", MaxAnnotationLen), true},
		{"origin past it", AnnotationOrigin, strings.Repeat("o", MaxAnnotationLen+1), false},
		{"trace of 256 names", AnnotationTrace, names, true},
		{"trace of 257 names", AnnotationTrace, names + ",y", false},
		{"a null trace", AnnotationTrace, nil, true},
		{"a binary origin", AnnotationOrigin, []byte("a"), false},
		{"a ulong trace", AnnotationTrace, uint64(1), false},
	} {
		p := hopPayload(t, wire.Map{{Key: wire.Symbol(c.key), Value: c.value}})
		s, err := wire.ScanSections(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadHop(p, &s)
		var fe *FieldError
		if c.ok != (err == nil) || !c.ok && (!errors.As(err, &fe) || !strings.Contains(fe.Field, c.key)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// FuzzReadHop: whatever the bytes, reading the hop annotations and
// writing a trace never panics, and what it accepts is within the
// bounds.
func FuzzReadHop(f *testing.F) {
	f.Add(hopPayload(f, wire.Map{{Key: wire.Symbol(AnnotationOrigin), Value: "a"}, {Key: wire.Symbol(AnnotationTrace), Value: "a,b"}}))
	f.Add(hopPayload(f, wire.Map{{Key: wire.Symbol(AnnotationTrace), Value: int64(3)}}))
	f.Add([]byte{0x00, 0x53, 0x72, 0xc1, 0x03, 0x01, 0xa3, 0x00})
	f.Fuzz(func(t *testing.T, payload []byte) {
		s, err := wire.ScanSections(payload)
		if err != nil {
			return
		}
		h, err := ReadHop(payload, &s)
		if err != nil {
			return
		}
		if len(h.Origin) > MaxAnnotationLen || len(h.Trace) > MaxAnnotationLen || strings.Count(string(h.Trace), ",") >= MaxTraceLen {
			t.Fatalf("accepted past the bounds: origin %d bytes, trace %d bytes", len(h.Origin), len(h.Trace))
		}
		_ = TraceHas(h.Trace, "a")
		v, _ := AppendTraceValue(nil, nil, h.Trace, "a")
		if d := wire.NewDecoder(v); d.StringBytes() == nil || d.Err() != nil {
			t.Fatalf("trace value % x does not decode", v)
		}
	})
}
