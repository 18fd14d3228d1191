package routespec

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzSpecUnmarshalJSON decodes arbitrary bytes as a route spec, as the
// admin API and the state file do with what they are given: it must never
// panic, checking what it accepted must not either, and what it accepts
// must survive encoding: the encoding of a decoded spec decodes to a spec
// with the same encoding and the same identity.
func FuzzSpecUnmarshalJSON(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"queue","dest":"b","src":"a","exchange":"amq.direct","queue":"orders","durable":true}`,
		`{"kind":"exchange","dest":"b","src":"a","exchange":"amq.topic","key":"#","outcome_timeout":"1m30s","no_path":["hold 10s","dead-letter"]}`,
		`{"kind":"dynamic","dest":"b","src":"a","exchange":"x","divert_bindings":true,"credit":-1}`,
		`{"kind":"queue","outcome_timeout":"soon"}`,
		`{"kind":"queue","nope":1}`,
		`{"kind":7}`,
		`{"dest_queue":"q","max_moves":3,"no_path":[]}`,
		`[]`, `null`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Spec
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		_ = s.WithDefaults().Validate() // must not panic; its verdict is not the point here
		first, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("a decoded spec does not encode: %v (%+v)", err, s)
		}
		var again Spec
		if err := json.Unmarshal(first, &again); err != nil {
			t.Fatalf("a decoded spec's encoding %s does not decode: %v", first, err)
		}
		second, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, second) || again.ID() != s.ID() {
			t.Fatalf("round trip changed the spec:\n%s\n%s", first, second)
		}
	})
}
