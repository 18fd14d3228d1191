package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleLSA() LSA {
	return LSA{
		Router: "paris-1", Instance: 1_700_000_000_000_000_000, Seq: 42, Time: 1_700_000_100_000_000_000,
		Brokers: []BrokerState{{Name: "paris", State: StateOperational}, {Name: "lyon", State: "Waiting"}},
		Links:   []Link{{From: "paris", To: "lyon", Cost: 3, Up: true}, {From: "lyon", To: "paris", Cost: 3}},
		Ext:     map[string]json.RawMessage{"addresses": json.RawMessage(`["orders","<q>"]`)},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	l := sampleLSA()
	data, err := Encode(l, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(`{"v":2,"lsa":{"router":"paris-1",`)) {
		t.Fatalf("unexpected wire form %s", data)
	}
	got, err := Decode(data, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	l.Version = ProtocolVersion
	l.Ext["addresses"] = json.RawMessage(`["orders","\u003cq\u003e"]`) // as Encode writes it
	if !reflect.DeepEqual(got, l) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, l)
	}
}

// A newer router's fields, inside ext or beside the known ones, are
// ignored by this version and survive a re-flood (which forwards the
// received bytes).
func TestUnknownFieldsAreIgnored(t *testing.T) {
	body := fmt.Sprintf(`{"router":"r2","instance":5,"seq":1,"time":%d,"brokers":[{"name":"b","state":"Operational","zone":"eu"}],"links":[],"demand":{"x":1},"ext":{"addresses":{"a":[1,2]}}}`, t0.UnixNano())
	data := signed(ProtocolVersion, body, testSecret)
	l, err := Decode(data, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if l.Router != "r2" || string(l.Ext["addresses"]) != `{"a":[1,2]}` {
		t.Fatalf("decoded %+v", l)
	}
	n := newNode(t, "r1")
	if _, err := n.SetLocal([]BrokerState{{Name: "a", State: StateOperational}, {Name: "b", State: StateOperational}}, nil, t0); err != nil {
		t.Fatal(err)
	}
	r := n.Receive(data, "b", t0)
	if len(r.Flood) == 0 || !bytes.Equal(r.Flood[0].Data, data) {
		t.Fatalf("the re-flood does not carry the received bytes: %+v", r.Flood)
	}
}

// signed builds an envelope around a body by hand, as another
// implementation (or a later version) would.
func signed(v int, body string, secret []byte) []byte {
	mac := sign(secret, v, []byte(body))
	return []byte(fmt.Sprintf(`{"v":%d,"lsa":%s,"mac":%q}`, v, body, b64(mac)))
}

func b64(b []byte) string {
	s, _ := json.Marshal(b) // []byte marshals as standard base64
	return strings.Trim(string(s), `"`)
}

func TestDecodeErrors(t *testing.T) {
	good, _ := Encode(sampleLSA(), testSecret)
	body := `{"router":"r2","instance":5,"seq":1,"time":7,"brokers":[],"links":[]}`
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"forged", mustEncode(t, sampleLSA(), []byte("another secret")), ErrBadSignature},
		{"tampered", bytes.Replace(good, []byte(`"seq":42`), []byte(`"seq":43`), 1), ErrBadSignature},
		{"unsigned", []byte(`{"v":2,"lsa":` + body + `}`), ErrUnsigned},
		{"empty mac", []byte(`{"v":2,"lsa":` + body + `,"mac":""}`), ErrUnsigned},
		{"mac not base64", []byte(`{"v":2,"lsa":` + body + `,"mac":"!!"}`), ErrBadSignature},
		{"short mac", []byte(`{"v":2,"lsa":` + body + `,"mac":"AAAA"}`), ErrBadSignature},
		{"too large", append(bytes.Clone(good), make([]byte, MaxLSASize)...), ErrTooLarge},
		{"not json", []byte("hello"), ErrMalformed},
		{"no version", []byte(`{"lsa":{},"mac":"x"}`), ErrMalformed},
		{"string version", []byte(`{"v":"1","lsa":{},"mac":"x"}`), ErrMalformed},
		{"version 1 (no signed time)", signed(1, `{"router":"r2","instance":5,"seq":1,"brokers":[],"links":[]}`, testSecret), ErrVersion},
		{"version 3", signed(3, body, testSecret), ErrVersion},
		{"version 3 forged", signed(3, body, []byte("x")), ErrBadSignature},
		{"lsa not an object", signed(2, `[1]`, testSecret), ErrMalformed},
		{"no router", signed(2, `{"instance":5,"seq":1,"time":7}`, testSecret), ErrMalformed},
		{"bad router id", signed(2, `{"router":"a b","instance":5,"seq":1,"time":7}`, testSecret), ErrMalformed},
		{"seq 0", signed(2, `{"router":"r","instance":5,"seq":0,"time":7}`, testSecret), ErrMalformed},
		{"negative seq", signed(2, `{"router":"r","instance":5,"seq":-1,"time":7}`, testSecret), ErrMalformed},
		{"no time", signed(2, `{"router":"r","instance":5,"seq":1}`, testSecret), ErrMalformed},
		{"time 0", signed(2, `{"router":"r","instance":5,"seq":1,"time":0}`, testSecret), ErrMalformed},
		{"negative time", signed(2, `{"router":"r","instance":5,"seq":1,"time":-7}`, testSecret), ErrMalformed},
		{"time not an integer", signed(2, `{"router":"r","instance":5,"seq":1,"time":1.5}`, testSecret), ErrMalformed},
		{"cost 0", signed(2, `{"router":"r","instance":5,"seq":1,"time":7,"brokers":[{"name":"a","state":"Operational"},{"name":"b","state":"Operational"}],"links":[{"from":"a","to":"b","cost":0}]}`, testSecret), ErrMalformed},
		{"link to an unattached broker", signed(2, `{"router":"r","instance":5,"seq":1,"time":7,"brokers":[{"name":"a","state":"Operational"}],"links":[{"from":"a","to":"b","cost":1}]}`, testSecret), ErrMalformed},
		{"trailing data", append(bytes.Clone(good), []byte(" {}")...), ErrMalformed},
	} {
		_, err := Decode(c.data, testSecret)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "topology: ") {
			t.Errorf("%s: error %q lacks the package prefix", c.name, err)
		}
	}
}

func TestVersionErrorCarriesTheVersion(t *testing.T) {
	_, err := Decode(signed(7, `{}`, testSecret), testSecret)
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != 7 || !errors.Is(err, ErrVersion) {
		t.Fatalf("got %v", err)
	}
}

func TestEncodeRejects(t *testing.T) {
	if _, err := Encode(sampleLSA(), nil); !errors.Is(err, ErrNoSecret) {
		t.Errorf("no secret: %v", err)
	}
	if _, err := Decode([]byte("{}"), nil); !errors.Is(err, ErrNoSecret) {
		t.Errorf("decode with no secret: %v", err)
	}
	big := sampleLSA()
	for i := 0; i < MaxBrokers; i++ {
		big.Brokers = append(big.Brokers, BrokerState{Name: fmt.Sprintf("%0120d", i), State: StateOperational})
	}
	big.Brokers = big.Brokers[:MaxBrokers]
	big.Links = nil
	for i := 0; i < MaxLinks; i++ { // 1,024 links between long names: ~280 KB
		big.Links = append(big.Links, Link{From: big.Brokers[i%200].Name, To: big.Brokers[i%200+1].Name, Cost: 1})
	}
	if _, err := Encode(big, testSecret); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	bad := sampleLSA()
	bad.Links[0].Cost = MaxCost + 1
	if _, err := Encode(bad, testSecret); !errors.Is(err, ErrMalformed) {
		t.Errorf("cost over the limit: %v", err)
	}
	bad = sampleLSA()
	bad.Ext = map[string]json.RawMessage{"x": json.RawMessage("{")}
	if _, err := Encode(bad, testSecret); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad ext: %v", err)
	}
}

func mustEncode(t testing.TB, l LSA, secret []byte) []byte {
	t.Helper()
	data, err := Encode(l, secret)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{
		"a": true, "paris-1": true, "a.b_c-d": true, "9": true,
		"": false, "-a": false, ".a": false, "a b": false, "é": false, "a/b": false,
		strings.Repeat("x", MaxNameLen): true, strings.Repeat("x", MaxNameLen+1): false,
	} {
		if err := checkName("n", name, MaxNameLen); (err == nil) != ok {
			t.Errorf("checkName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// Rejected LSAs are counted by reason on the node, and none gets into the
// graph.
func TestReceiveCountsRejections(t *testing.T) {
	n := newNode(t, "r1")
	l := LSA{Router: "r2", Instance: 1, Seq: 1, Time: t0.UnixNano(), Brokers: []BrokerState{{Name: "a", State: StateOperational}}}
	good := mustEncode(t, l, testSecret)
	for _, data := range [][]byte{
		mustEncode(t, l, []byte("forged")),
		bytes.Replace(good, []byte(`"seq":1`), []byte(`"seq":2`), 1),
		bytes.Replace(good, []byte(`,"mac"`), []byte(`,"nomac"`), 1),
		[]byte("{"),
		make([]byte, MaxLSASize+1),
	} {
		r := n.Receive(data, "a", t0)
		if len(r.Events) != 1 || r.Events[0].Kind != EventRejected || len(r.Flood) != 0 {
			t.Errorf("%.40q: %+v", data, r)
		}
	}
	want := Counters{BadSignature: 2, Unsigned: 1, Malformed: 1, TooLarge: 1}
	if got := n.Counters(); got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	if len(n.Snapshot(t0).Routers) != 1 {
		t.Fatal("a rejected LSA was stored")
	}
}

func newNode(t testing.TB, id string) *Node {
	t.Helper()
	n, err := New(Config{RouterID: id, Instance: 1, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestConfigValidation(t *testing.T) {
	_, err := New(Config{RouterID: "bad id", Refresh: time.Minute, MaxAge: time.Second, Jitter: 2})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"router id", "instance 0", "no network secret", "max age", "jitter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %q:\n%v", want, err)
		}
	}
	n := newNode(t, "r1")
	if n.cfg.Refresh != 30*time.Second || n.cfg.MaxAge != 90*time.Second || n.cfg.MinOriginate != time.Second {
		t.Errorf("defaults not applied: %+v", n.cfg)
	}
	if _, err := n.SetLocal([]BrokerState{{Name: "a", State: "Operational"}}, []Link{{From: "a", To: "z", Cost: 1}}, t0); err == nil {
		t.Error("SetLocal accepted a link to a broker it is not attached to")
	}
}
