package topology

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode: Decode never panics, every error it returns is one of the
// typed ones, and whatever it accepts re-encodes to a canonical form that
// decodes to the same LSA. Each input is tried twice: as a whole message,
// and as the body of a correctly signed envelope, since random bytes
// never get past the MAC to the body parser. Seeds: below and in
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(mustEncode(f, sampleLSA(), testSecret))
	f.Add([]byte(`{"router":"r","instance":1,"seq":1,"time":1,"brokers":[{"name":"a","state":"Operational"},{"name":"b","state":"x"}],"links":[{"from":"a","to":"b","cost":2,"up":true}],"ext":{"k":[1,"<"]}}`))
	f.Add([]byte(`{"v":1,"lsa":{},"mac":""}`))
	f.Add([]byte(`{"v":2,"lsa":{"router":"r"},"mac":"AAAA"}`))
	f.Add([]byte(`{"router":"r","instance":1,"seq":1,"time":-1}`))
	f.Add([]byte(`{"router":"r","instance":1,"seq":1,"time":9223372036854775807}`))
	f.Add([]byte(`{"router":"r","instance":1,"seq":1,"time":1e3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		if len(data) < MaxLSASize {
			checkDecode(t, signed(ProtocolVersion, string(data), testSecret))
		}
	})
}

var typedErrors = []error{ErrTooLarge, ErrMalformed, ErrUnsigned, ErrBadSignature, ErrVersion}

func checkDecode(t *testing.T, data []byte) {
	l, err := Decode(data, testSecret)
	if err != nil {
		for _, e := range typedErrors {
			if errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("untyped error %v", err)
	}
	again, err := Encode(l, testSecret)
	if err != nil {
		t.Fatalf("decoded %+v but cannot re-encode it: %v", l, err)
	}
	l2, err := Decode(again, testSecret)
	if err != nil || !reflect.DeepEqual(l, l2) {
		t.Fatalf("re-encoded LSA decodes differently:\n%+v\n%+v (%v)", l, l2, err)
	}
	if third, _ := Encode(l2, testSecret); !bytes.Equal(third, again) {
		t.Fatalf("encoding is not canonical:\n%s\n%s", again, third)
	}
}
