package links

import (
	"testing"

	goamqp "github.com/Azure/go-amqp"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// FuzzTransitAnnotations scans arbitrary bytes as a message's sections
// and reads its transit header as a transit forwarder does with anything
// a broker hands it: it must never panic, and whatever it accepts must be
// within the rules (a non-negative hop count, a bounded trace, strings in
// bounds). Seeds: messages as go-amqp encodes them.
func FuzzTransitAnnotations(f *testing.F) {
	for _, ann := range []goamqp.Annotations{
		{AnnotationHops: int64(2), AnnotationDestBroker: "b", AnnotationDestAddress: "queue:q", AnnotationTrace: "a,b"},
		{AnnotationHops: int64(-1), AnnotationDestBroker: "b", AnnotationDestAddress: "queue:q"},
		{AnnotationHops: 2.5, AnnotationDestBroker: "b", AnnotationDestAddress: "exchange:amq.topic:k"},
		{AnnotationHops: "0", AnnotationDestBroker: int32(7), AnnotationDestAddress: "queue:q"},
		{AnnotationOrigin: "r1", AnnotationFanned: "x", AnnotationDestBroker: "b", AnnotationDestAddress: "topic:t"},
	} {
		m := &goamqp.Message{Annotations: ann, Data: [][]byte{[]byte("x")},
			ApplicationProperties: map[string]any{PropDestBroker: "b", PropDestAddress: "queue:q"}}
		b, err := m.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := wire.ScanSections(data)
		if err != nil {
			return
		}
		m := engineMessage{payload: data, s: &s}
		h, err := readTransit(m)
		if err != nil {
			return
		}
		if h.Hops < 0 || len(h.Trace) > MaxTraceLen || len(h.Dest) > MaxAnnotationLen {
			t.Fatalf("accepted a header out of bounds: %+v", h)
		}
		if checkAnnotations(m) != nil {
			t.Fatal("readTransit accepted what checkAnnotations refuses")
		}
	})
}

// FuzzGlob: the ingress allow-list's matcher never panics, "*" matches
// everything, and a pattern without wildcards matches only itself.
func FuzzGlob(f *testing.F) {
	f.Add("queue:orders.*", "queue:orders.eu")
	f.Add("*:*", "exchange:amq.topic:k")
	f.Add("a?c", "abc")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		got := Glob(pattern, s)
		if Glob("*", s) != true {
			t.Fatalf("* does not match %q", s)
		}
		plain := true
		for _, r := range pattern {
			if r == '*' || r == '?' {
				plain = false
			}
		}
		if plain && got != (pattern == s) {
			t.Fatalf("Glob(%q, %q) = %v", pattern, s, got)
		}
	})
}
