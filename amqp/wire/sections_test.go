package wire

import (
	"bytes"
	"testing"
)

// message builds a payload: header, delivery and message annotations
// (nil leaves a section out), then properties and a data body.
func message(t testing.TB, da, ma Map, body []byte) []byte {
	b := AppendDescriptor(nil, DescHeader)
	b, _ = AppendValue(b, []any{true, uint8(4)})
	var err error
	if da != nil {
		b = AppendDescriptor(b, DescDeliveryAnnotations)
		if b, err = AppendValue(b, da); err != nil {
			t.Fatal(err)
		}
	}
	if ma != nil {
		b = AppendDescriptor(b, DescMessageAnnotations)
		if b, err = AppendValue(b, ma); err != nil {
			t.Fatal(err)
		}
	}
	b = AppendDescriptor(b, DescProperties)
	b, _ = AppendValue(b, []any{"id-1"})
	b = AppendDescriptor(b, DescData)
	return AppendBinary(b, body)
}

func TestSectionsRewrite(t *testing.T) {
	body := bytes.Repeat([]byte("b"), 300)
	in := message(t, Map{{Symbol("x-da"), "hop"}}, Map{{Symbol("x-keep"), "k"}, {Symbol("x-fedrouter-hops"), uint32(1)}}, body)
	s, err := ScanSections(in)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Header.Present() || !s.DeliveryAnnotations.Present() || !s.MessageAnnotations.Present() {
		t.Fatalf("sections %+v", s)
	}
	v, ok := s.Annotation(in, "x-fedrouter-hops")
	if d := NewDecoder(v); !ok || d.Uint() != 1 {
		t.Fatalf("hops %v % x", ok, v)
	}
	out := AppendRewritten(nil, in, &s, true, Annotated{Key: "x-fedrouter-hops", Value: AppendUint(nil, 2)},
		Annotated{Key: "x-new", Value: AppendString(nil, "n")})
	want := message(t, nil, Map{{Symbol("x-keep"), "k"}, {Symbol("x-fedrouter-hops"), uint32(2)}, {Symbol("x-new"), "n"}}, body)
	if !bytes.Equal(out, want) {
		t.Fatalf("rewritten\n% x\nwant\n% x", out, want)
	}
	if !bytes.Equal(out[len(out)-len(in)+s.Bare:], in[s.Bare:]) {
		t.Fatal("bare message changed")
	}
	// No annotations yet: one is added.
	plain := message(t, nil, nil, body)
	s, err = ScanSections(plain)
	if err != nil {
		t.Fatal(err)
	}
	out = AppendRewritten(nil, plain, &s, true, Annotated{Key: "x-fedrouter-hops", Value: AppendUint(nil, 1)})
	if want := message(t, nil, Map{{Symbol("x-fedrouter-hops"), uint32(1)}}, body); !bytes.Equal(out, want) {
		t.Fatalf("added\n% x\nwant\n% x", out, want)
	}
	// Nothing to set: the payload is copied as it is.
	if out = AppendRewritten(nil, in, &s, false); len(out) == 0 {
		t.Fatal("empty copy")
	}
}

func TestSectionsRefuseBadKeys(t *testing.T) {
	for name, ma := range map[string]Map{
		"string key": {{"x-str", "v"}},
		"int key":    {{int32(5), "v"}},
		"list key":   {{[]any{}, "v"}},
	} {
		if _, err := ScanSections(message(t, nil, ma, nil)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := ScanSections(message(t, Map{{"bad", "v"}}, nil, nil)); err == nil {
		t.Error("a string key in delivery annotations accepted")
	}
	if _, err := ScanSections(message(t, nil, Map{{uint64(7), "v"}, {Symbol("s"), "v"}}, nil)); err != nil {
		t.Errorf("ulong and symbol keys refused: %v", err)
	}
}

// The lenient scan locates annotations sections whose keys break the
// rule (a dead-letter queue keeps such a message whole), says whether
// the message annotations did, and still refuses what does not parse.
func TestSectionsLenient(t *testing.T) {
	badMA := message(t, nil, Map{{"x-str", "v"}}, []byte("body"))
	s, bad, err := ScanSectionsLenient(badMA)
	if err != nil || !bad || !s.MessageAnnotations.Present() || !bytes.HasPrefix(badMA[s.MessageAnnotations.Start:], []byte{0x00, 0x53, 0x72}) {
		t.Fatalf("bad message annotations: %+v bad %v err %v", s, bad, err)
	}
	out := AppendRewritten(nil, badMA, &Sections{Header: s.Header, Bare: s.Bare}, true, Annotated{Key: "x-why", Value: AppendString(nil, "k")})
	if got, err := ScanSections(out); err != nil || !got.MessageAnnotations.Present() || !bytes.HasSuffix(out, badMA[s.Bare:]) {
		t.Fatalf("rewritten without the bad section: %+v %v", got, err)
	}
	badDA := message(t, Map{{"bad", "v"}}, Map{{Symbol("x-ok"), "v"}}, nil)
	if s, bad, err := ScanSectionsLenient(badDA); err != nil || bad || !s.DeliveryAnnotations.Present() || !s.MessageAnnotations.Present() {
		t.Fatalf("bad delivery annotations: %+v bad %v err %v", s, bad, err)
	}
	if _, _, err := ScanSectionsLenient(badMA[:s.MessageAnnotations.End-2]); err == nil {
		t.Fatal("a truncated section accepted")
	}
}

// A nil value removes an annotation; the others stay, in their order.
func TestSectionsRewriteRemoves(t *testing.T) {
	body := []byte("body")
	in := message(t, nil, Map{{Symbol("x-keep"), "k"}, {Symbol("x-fedrouter-trace"), "a,b"}}, body)
	s, err := ScanSections(in)
	if err != nil {
		t.Fatal(err)
	}
	out := AppendRewritten(nil, in, &s, true, Annotated{Key: "x-fedrouter-trace"}, Annotated{Key: "x-absent"})
	if want := message(t, nil, Map{{Symbol("x-keep"), "k"}}, body); !bytes.Equal(out, want) {
		t.Fatalf("removed\n% x\nwant\n% x", out, want)
	}
}

// An application property is found by its string key past the
// properties section; a missing one, or one only in the message
// annotations, is not.
func TestSectionsApplicationProperty(t *testing.T) {
	b := AppendDescriptor(nil, DescMessageAnnotations)
	b, _ = AppendValue(b, Map{{Symbol("fedrouter-dest-broker"), "not-this"}})
	b = AppendDescriptor(b, DescProperties)
	b, _ = AppendValue(b, []any{"id-1"})
	b = AppendDescriptor(b, DescApplicationProperties)
	b, _ = AppendValue(b, Map{{"other", int64(1)}, {"fedrouter-dest-broker", "rabbit2"}})
	b = AppendDescriptor(b, DescData)
	b = AppendBinary(b, []byte("x"))
	s, err := ScanSections(b)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := s.ApplicationProperty(b, "fedrouter-dest-broker")
	if d := NewDecoder(v); !ok || d.String() != "rabbit2" {
		t.Fatalf("got %v % x", ok, v)
	}
	if _, ok := s.ApplicationProperty(b, "missing"); ok {
		t.Fatal("found a missing property")
	}
	plain := message(t, nil, nil, []byte("x"))
	s, _ = ScanSections(plain)
	if _, ok := s.ApplicationProperty(plain, "fedrouter-dest-broker"); ok {
		t.Fatal("found a property in a message without any")
	}
}
