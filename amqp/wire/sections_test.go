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
