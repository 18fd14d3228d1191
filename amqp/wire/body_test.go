package wire

import (
	"bytes"
	"strings"
	"testing"
)

func section(b []byte, desc uint64, v any) []byte {
	b = AppendDescriptor(b, desc)
	if bin, ok := v.([]byte); ok {
		return AppendBinary(b, bin)
	}
	b, _ = AppendValue(b, v)
	return b
}

func TestDataBody(t *testing.T) {
	props := section(nil, DescProperties, []any{"id-1"})
	appProps := section(nil, DescApplicationProperties, Map{{"k", "v"}})
	data := func(s string) []byte { return section(nil, DescData, []byte(s)) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string // the body, or the error's text
		err     bool
	}{
		{"annotated, one data section", message(t, Map{{Symbol("d"), "x"}}, Map{{Symbol("m"), uint32(1)}}, []byte("body")), "body", false},
		{"bare data", data("lsa"), "lsa", false},
		{"two data sections joined", cat(props, appProps, data("ab"), data("cd")), "abcd", false},
		{"footer after data", cat(data("x"), section(nil, DescFooter, Map{{Symbol("f"), "y"}})), "x", false},
		{"empty data section", data(""), "", false},
		{"amqp-value", section(nil, DescAMQPValue, "text"), "at byte 0: section amqp-value where a data body was expected", true},
		{"amqp-sequence", cat(props, section(nil, DescAMQPSequence, []any{"a"})), "section amqp-sequence", true},
		{"no body", props, "no data section", true},
		{"properties after data", cat(data("x"), props), "section properties", true},
		{"footer before data", cat(section(nil, DescFooter, Map{}), data("x")), "at byte 0: section footer", true},
		{"truncated", data("body")[:5], "wire: decode", true},
		{"not described", []byte{0xa1, 0x01, 'x'}, "described type", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DataBody(tc.payload)
			if tc.err {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want one with %q", err, tc.want)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzDataBody: no panic, and a body found lies within the payload's size.
func FuzzDataBody(f *testing.F) {
	f.Add(message(f, nil, nil, []byte("body")))
	f.Add(section(section(nil, DescData, []byte("a")), DescData, []byte("b")))
	f.Add(section(nil, DescAMQPValue, "x"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		body, err := DataBody(payload)
		if err == nil && len(body) > len(payload) {
			t.Fatalf("a %d-byte body from a %d-byte payload", len(body), len(payload))
		}
	})
}
