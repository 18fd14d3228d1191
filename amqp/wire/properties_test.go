package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// bareMessage builds a bare message: a properties section with fields
// (nil leaves it out), application properties and a data body.
func bareMessage(t testing.TB, fields []any) []byte {
	var b []byte
	var err error
	if fields != nil {
		b = AppendDescriptor(b, DescProperties)
		if b, err = AppendValue(b, fields); err != nil {
			t.Fatal(err)
		}
	}
	return appendAfterProperties(t, b)
}

// appendAfterProperties appends what follows the properties in
// bareMessage: application properties and a data body.
func appendAfterProperties(t testing.TB, b []byte) []byte {
	b = AppendDescriptor(b, DescApplicationProperties)
	b, err := AppendValue(b, Map{{"k", "v"}})
	if err != nil {
		t.Fatal(err)
	}
	b = AppendDescriptor(b, DescData)
	return AppendBinary(b, []byte("body"))
}

// splitProperties reads a bare message's properties section: its
// fields as encoded, and the bytes after it (the whole bare message
// when it has none). ok is false when it has none.
func splitProperties(t testing.TB, bare []byte) (fields [][]byte, rest []byte, ok bool) {
	t.Helper()
	d := NewDecoder(bare)
	if d.Len() == 0 {
		return nil, bare, false
	}
	if desc := d.Descriptor(); d.Err() != nil || desc != DescProperties {
		return nil, bare, false
	}
	l := d.List()
	for l.Next() {
		fields = append(fields, d.Raw())
	}
	d.Done(&l)
	if d.Err() != nil {
		t.Fatalf("properties do not decode: %v", d.Err())
	}
	return fields, d.Rest(), true
}

// checkSubject checks out is in with subject set: the fields other than
// the subject byte for byte (nulls where in had none), the sections
// after the properties byte for byte.
func checkSubject(t testing.TB, in, out []byte, subject string) {
	t.Helper()
	inFields, inRest, _ := splitProperties(t, in)
	outFields, outRest, ok := splitProperties(t, out)
	if !ok {
		t.Fatalf("no properties section in\n% x", out)
	}
	if len(outFields) != max(len(inFields), 4) {
		t.Fatalf("%d fields, want %d", len(outFields), max(len(inFields), 4))
	}
	for i, f := range outFields {
		want := AppendNull(nil)
		switch {
		case i == 3:
			want = AppendString(nil, subject)
		case i < len(inFields):
			want = inFields[i]
		}
		if !bytes.Equal(f, want) {
			t.Fatalf("field %d: % x, want % x", i, f, want)
		}
	}
	if !bytes.Equal(outRest, inRest) {
		t.Fatalf("sections after the properties changed:\n% x\nwant\n% x", outRest, inRest)
	}
}

func TestBareWithSubject(t *testing.T) {
	ts := Timestamp(1700000000000)
	long := strings.Repeat("s", 300)
	for name, fields := range map[string][]any{
		"no properties":       nil,
		"empty list":          {},
		"message-id only":     {"id-1"},
		"three fields":        {"id-1", []byte("user"), "to"},
		"subject null":        {"id-1", nil, nil, nil},
		"subject already":     {"id-1", []byte("user"), "to", "old.key", "reply", "corr", Symbol("text/plain")},
		"every field":         {uint64(7), []byte("u"), "to", "old", "re", "c", Symbol("ct"), Symbol("ce"), ts, ts, "g", uint32(3), "rg"},
		"long subject before": {"id-1", nil, nil, long, "after"},
	} {
		for _, subject := range []string{"news.eu", long} {
			in := bareMessage(t, fields)
			out, err := AppendBareWithSubject([]byte("prefix"), in, subject)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !bytes.HasPrefix(out, []byte("prefix")) {
				t.Fatalf("%s: dst lost", name)
			}
			checkSubject(t, in, out[len("prefix"):], subject)
		}
	}
}

// The properties list as list8 and as list32 (a peer may use the large
// form for a small list): both read, the result in the smallest form
// that fits; a list that needs 32 bits keeps them.
func TestBareWithSubjectListForms(t *testing.T) {
	small := bareMessage(t, []any{"id-1", nil, "to", "old"})
	// The same properties in the list32 form.
	fields, rest, _ := splitProperties(t, small)
	body := bytes.Join(fields, nil)
	wide := AppendDescriptor(nil, DescProperties)
	wide = append(wide, codeList32)
	wide = binary.BigEndian.AppendUint32(wide, uint32(4+len(body)))
	wide = binary.BigEndian.AppendUint32(wide, uint32(len(fields)))
	wide = append(append(wide, body...), rest...)
	for name, in := range map[string][]byte{"list8": small, "list32": wide} {
		out, err := AppendBareWithSubject(nil, in, "k")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkSubject(t, in, out, "k")
		if c := out[3]; c != codeList8 {
			t.Fatalf("%s: list code 0x%02x, want list8", name, c)
		}
	}
	big := bareMessage(t, []any{strings.Repeat("i", 400), nil, nil, "old"})
	out, err := AppendBareWithSubject(nil, big, "k")
	if err != nil {
		t.Fatal(err)
	}
	checkSubject(t, big, out, "k")
	if c := out[3]; c != codeList32 {
		t.Fatalf("list code 0x%02x, want list32", c)
	}
}

// A symbolic descriptor is the properties section too; another section
// first (application properties: no properties section) gets one put
// in front of it.
func TestBareWithSubjectDescriptors(t *testing.T) {
	sym := AppendSymbol([]byte{codeDescribed}, "amqp:properties:list")
	sym, _ = AppendValue(sym, []any{"id-1", nil, nil, "old", "reply"})
	sym = appendAfterProperties(t, sym)
	out, err := AppendBareWithSubject(nil, sym, "k")
	if err != nil {
		t.Fatal(err)
	}
	checkSubject(t, sym, out, "k")
	noProps := bareMessage(t, nil)
	out, _ = AppendBareWithSubject(nil, noProps, "k")
	if _, rest, _ := splitProperties(t, out); !bytes.Equal(rest, noProps) {
		t.Fatal("sections after an inserted properties section changed")
	}
	// A message of one section only (an empty bare message as well).
	for _, in := range [][]byte{nil, AppendBinary(AppendDescriptor(nil, DescData), []byte("b"))} {
		out, err := AppendBareWithSubject(nil, in, "k")
		if err != nil {
			t.Fatal(err)
		}
		checkSubject(t, in, out, "k")
	}
}

func TestBareWithSubjectRefusesMalformed(t *testing.T) {
	props := AppendDescriptor(nil, DescProperties)
	list8 := func(count byte, body ...byte) []byte {
		return append(append(append([]byte{}, props...), codeList8, byte(len(body)+1), count), body...)
	}
	intSubject, _ := AppendValue(append([]byte{}, props...), []any{"id", nil, nil, int32(5)})
	described, _ := AppendValue(append([]byte{}, props...), []any{"id", nil, nil, Described{Descriptor: uint64(1), Value: "x"}})
	for name, c := range map[string]struct {
		bare []byte
		want string
	}{
		"not described":         {[]byte{codeStr8, 1, 'x'}, "described type"},
		"descriptor cut":        {[]byte{codeDescribed, codeSmallUlong}, "bytes needed"},
		"a map, not a list":     {append(append([]byte{}, props...), codeMap8, 1, 0), "a list must follow"},
		"a string, not a list":  {append(append([]byte{}, props...), codeStr8, 1, 'x'), "a list must follow"},
		"size beyond the bytes": {append(append([]byte{}, props...), codeList8, 40, 1, codeNull), "compound of 40 bytes"},
		"count beyond the size": {list8(5, codeNull), "claims 5 elements"},
		"count below the size":  {list8(1, codeNull, codeNull), "elements end at"},
		"a field cut short":     {list8(1, codeStr8, 9, 'a'), "bytes needed"},
		"unknown type code":     {list8(1, 0x33), "unknown type code"},
		"subject not a string":  {intSubject, "subject is of type 0x54"},
		"subject described":     {described, "subject is of type 0x00"},
		"list32 size below 4":   {append(append([]byte{}, props...), codeList32, 0, 0, 0, 2, 0, 0, 0, 0), "compound of size 2"},
	} {
		out, err := AppendBareWithSubject([]byte("dst"), c.bare, "k")
		if err == nil || !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrDecode naming %q", name, err, c.want)
		}
		if string(out) != "dst" {
			t.Errorf("%s: dst became % x", name, out)
		}
	}
}

// With the annotations rewritten as well: the same as the two rewrites
// one after the other, and the leading sections as AppendRewritten
// writes them.
func TestRewrittenWithSubject(t *testing.T) {
	in := message(t, Map{{Symbol("x-da"), "hop"}}, Map{{Symbol("x-fedrouter-hops"), uint32(1)}}, []byte("body"))
	s, err := ScanSections(in)
	if err != nil {
		t.Fatal(err)
	}
	set := Annotated{Key: "x-fedrouter-hops", Value: AppendUint(nil, 2)}
	out, err := AppendRewrittenWithSubject([]byte("p"), in, &s, true, "news.eu", set)
	if err != nil {
		t.Fatal(err)
	}
	ann := AppendRewritten(nil, in, &s, true, set)
	sa, _ := ScanSections(ann)
	want, _ := AppendBareWithSubject(append([]byte("p"), ann[:sa.Bare]...), ann[sa.Bare:], "news.eu")
	if !bytes.Equal(out, want) {
		t.Fatalf("rewritten\n% x\nwant\n% x", out, want)
	}
	bad := append(append([]byte{}, in[:s.Bare]...), AppendDescriptor(nil, DescProperties)...)
	bad = append(bad, codeMap8, 1, 0)
	if sb, err := ScanSections(bad); err != nil {
		t.Fatal(err)
	} else if out, err := AppendRewrittenWithSubject([]byte("p"), bad, &sb, true, "k", set); err == nil || string(out) != "p" {
		t.Fatalf("malformed properties: % x, %v", out, err)
	}
}

// BenchmarkAppendRewritten and BenchmarkAppendRewrittenWithSubject: a
// 256-byte message's hop count rewritten, without and with its subject
// set in the same copy (a qpidd destination with a literal key).
func BenchmarkAppendRewritten(b *testing.B) { benchmarkRewrite(b, "") }

func BenchmarkAppendRewrittenWithSubject(b *testing.B) { benchmarkRewrite(b, "news.eu") }

func benchmarkRewrite(b *testing.B, subject string) {
	in := message(b, nil, Map{{Symbol("x-fedrouter-hops"), uint32(1)}}, bytes.Repeat([]byte("b"), 256))
	s, err := ScanSections(in)
	if err != nil {
		b.Fatal(err)
	}
	set := Annotated{Key: "x-fedrouter-hops", Value: AppendUint(nil, 2)}
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if subject == "" {
			buf = AppendRewritten(buf[:0], in, &s, true, set)
		} else if buf, err = AppendRewrittenWithSubject(buf[:0], in, &s, true, subject, set); err != nil {
			b.Fatal(err)
		}
	}
}
