package globaldest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func lim(m int64) Limits { return Limits{MaxMessages: m, Overflow: RejectPublish} }

func even(limit int64, brokers ...string) *AdShares {
	s := &AdShares{Limits: lim(limit), Messages: map[string]int64{}}
	for i, b := range brokers {
		s.Messages[b] = limit / int64(len(brokers))
		if i == 0 {
			s.Messages[b] += limit % int64(len(brokers))
		}
	}
	return s
}

func TestAgree(t *testing.T) {
	all := []string{"r1", "r2", "r3", "r4"}
	for _, tc := range []struct {
		name    string
		self    Ad
		others  []Ad
		waiting bool
		want    string // the role, formatted by roleString
	}{
		{"alone: decides, puts at its span", Ad{Router: "b", Limits: lim(100), Span: all}, nil, false,
			"routers=b decider=b deciding put=r1,r2,r3,r4 span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:b,r2:b,r3:b,r4:b"},
		{"one span, a higher id: follows the decider's shares, puts nothing",
			Ad{Router: "b", Limits: lim(100), Span: all}, []Ad{{Router: "a", Limits: lim(100), Span: all, Shares: even(100, all...)}}, false,
			"routers=a,b decider=a put= span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:a shares=r1=25,r2=25,r3=25,r4=25"},
		{"one span, the lowest id: decides", Ad{Router: "a", Limits: lim(100), Span: all}, []Ad{{Router: "b", Limits: lim(100), Span: all}}, false,
			"routers=a,b decider=a deciding put=r1,r2,r3,r4 span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:a"},
		{"overlapping spans: the union; a broker the decider lacks is put by the lowest attached, its use advertised",
			Ad{Router: "a", Limits: lim(100), Span: []string{"r1", "r2", "r3"}},
			[]Ad{{Router: "b", Limits: lim(100), Span: []string{"r2", "r3", "r4"}, Use: []Use{{Broker: "r4", Messages: 7}}}}, false,
			"routers=a,b decider=a deciding put=r1,r2,r3 span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:b remote=r4:7"},
		{"overlapping spans, the other side", Ad{Router: "b", Limits: lim(100), Span: []string{"r2", "r3", "r4"}},
			[]Ad{{Router: "a", Limits: lim(100), Span: []string{"r1", "r2", "r3"}, Shares: even(100, all...)}}, false,
			"routers=a,b decider=a put=r4 span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:b shares=r1=25,r2=25,r3=25,r4=25"},
		{"transitive: spans chained through others form one group (r3's policy: b's, the lowest attached); a disjoint span and a router without limits take no part",
			Ad{Router: "c", Limits: lim(100), Span: []string{"r3", "r4"}},
			[]Ad{{Router: "a", Limits: lim(100), Span: []string{"r1", "r2"}, Shares: even(100, all...)}, {Router: "b", Limits: lim(100), Span: []string{"r2", "r3"}},
				{Router: "0", Limits: lim(100), Span: []string{"r9"}}, {Router: "00", Limits: Limits{}, Span: all}}, false,
			"routers=a,b,c decider=a put=r4 span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:a,r2:a,r3:b,r4:c shares=r1=25,r2=25,r3=25,r4=25"},
		{"different limits: the smallest of each unit, reject-publish unless all drop-head, said",
			Ad{Router: "a", Limits: Limits{MaxMessages: 100, Overflow: DropHead}, Span: all},
			[]Ad{{Router: "b", Limits: Limits{MaxMessages: 80, MaxBytes: 5000, Overflow: RejectPublish}, Span: all}}, false,
			"routers=a,b decider=a deciding put=r1,r2,r3,r4 span=r1,r2,r3,r4 limits=max_messages=80 max_bytes=5000 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:a differs=the routers over its span configure different limits (a: max_messages=100 overflow=drop-head; b: max_messages=80 max_bytes=5000 overflow=reject-publish): the smallest hold"},
		{"the decider's shares for another limit: refused", Ad{Router: "b", Limits: lim(80), Span: all},
			[]Ad{{Router: "a", Limits: lim(100), Span: all, Shares: even(100, all...)}}, false,
			"routers=a,b decider=a put= span=r1,r2,r3,r4 limits=max_messages=80 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:a differs=the routers over its span configure different limits (a: max_messages=100 overflow=reject-publish; b: max_messages=80 overflow=reject-publish): the smallest hold refused=router a's shares are for max_messages=100 overflow=reject-publish, the limits in force are max_messages=80 overflow=reject-publish"},
		{"the decider's shares leave a broker of the span out: refused", Ad{Router: "b", Limits: lim(100), Span: all},
			[]Ad{{Router: "a", Limits: lim(100), Span: all, Shares: even(100, "r1", "r2", "r3")}}, false,
			"routers=a,b decider=a put= span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:a refused=router a gives r4 no share of messages"},
		{"the decider's shares do not sum to the limit: refused", Ad{Router: "b", Limits: lim(100), Span: all},
			[]Ad{{Router: "a", Limits: lim(100), Span: all, Shares: &AdShares{Limits: lim(100), Messages: map[string]int64{"r1": 90, "r2": 1, "r3": 1, "r4": 1}}}}, false,
			"routers=a,b decider=a put= span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:a refused=router a's shares of messages sum to 93, not 100"},
		{"waiting, the lowest id: the decider, but it neither decides nor puts; it follows the shares the one before decided", Ad{Router: "a", Limits: lim(100), Span: all},
			[]Ad{{Router: "b", Limits: lim(100), Span: all, Shares: even(100, all...)}}, true,
			"routers=a,b decider=a put= span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters= shares=r1=25,r2=25,r3=25,r4=25 waiting"},
		{"waiting alone: nobody decides", Ad{Router: "a", Limits: lim(100), Span: all}, nil, true,
			"routers=a decider=a put= span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters= waiting"},
		{"the decider waits (no shares): the others follow the shares the one before decided", Ad{Router: "c", Limits: lim(100), Span: all},
			[]Ad{{Router: "a", Limits: lim(100), Span: all}, {Router: "b", Limits: lim(100), Span: all, Shares: even(100, all...)}}, false,
			"routers=a,b,c decider=a put= span=r1,r2,r3,r4 limits=max_messages=100 overflow=reject-publish putters=r1:a,r2:a,r3:a,r4:a shares=r1=25,r2=25,r3=25,r4=25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := roleString(Agree(tc.self, tc.others, tc.waiting)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func roleString(r Role) string {
	s := fmt.Sprintf("routers=%s decider=%s", strings.Join(r.Routers, ","), r.Decider)
	if r.Deciding {
		s += " deciding"
	}
	s += fmt.Sprintf(" put=%s span=%s limits=%s", strings.Join(r.Put, ","), strings.Join(r.Span, ","), r.Limits)
	var putters []string
	for _, b := range slices.Sorted(maps.Keys(r.Putters)) {
		putters = append(putters, b+":"+r.Putters[b])
	}
	s += " putters=" + strings.Join(putters, ",")
	for _, u := range r.Remote {
		s += fmt.Sprintf(" remote=%s:%d", u.Broker, u.Messages)
	}
	if r.Differs != "" {
		s += " differs=" + r.Differs
	}
	if r.Shares != nil {
		var parts []string
		for _, b := range slices.Sorted(maps.Keys(r.Shares.Messages)) {
			parts = append(parts, fmt.Sprintf("%s=%d", b, r.Shares.Messages[b]))
		}
		s += " shares=" + strings.Join(parts, ",")
	}
	if r.Refused != "" {
		s += " refused=" + r.Refused
	}
	if r.Waiting {
		s += " waiting"
	}
	return s
}

// A decider gone (its advertisement expired): the next one keeps the
// share of the broker only the gone one was attached to (its policy
// stays as put) and shares the rest — the shares in force still sum to
// the limit; with the same brokers as before, nothing moves.
func TestDecideKeepingOrphans(t *testing.T) {
	prev := Shares{Messages: map[string]int64{"r1": 2500, "r2": 2500, "r3": 2500, "r4": 2500}, At: t0}
	use := []Use{{Broker: "r2"}, {Broker: "r3"}, {Broker: "r4"}}
	fixed := Orphans(prev, []string{"r2", "r3", "r4"})
	if fmt.Sprint(fixed.Messages) != "map[r1:2500]" || fixed.Bytes != nil {
		t.Fatalf("orphans %v %v", fixed.Messages, fixed.Bytes)
	}
	dec := DecideKeeping(lim(10000), use, fixed, prev, t0.Add(RebalanceEvery*3))
	if dec.Changed || fmt.Sprint(dec.Shares.Messages) != "map[r1:2500 r2:2500 r3:2500 r4:2500]" {
		t.Errorf("takeover with the same brokers: changed %v (%s), shares %v", dec.Changed, dec.Why, dec.Shares.Messages)
	}
	// r2 fills its share: the shares move among r2..r4; r1's stays.
	use[0].Messages = 2490
	dec = DecideKeeping(lim(10000), use, fixed, dec.Shares, t0.Add(RebalanceEvery*6))
	var sum int64
	for _, v := range dec.Shares.Messages {
		sum += v
	}
	if !dec.Changed || dec.Shares.Messages["r1"] != 2500 || sum != 10000 || dec.Shares.Messages["r2"] <= 2500 {
		t.Errorf("r2 pressed: changed %v (%s), shares %v (sum %d)", dec.Changed, dec.Why, dec.Shares.Messages, sum)
	}
	// The limit lowered under what the kept share leaves: not kept.
	dec = DecideKeeping(lim(2502), use, fixed, dec.Shares, t0.Add(RebalanceEvery*9))
	if _, ok := dec.Shares.Messages["r1"]; ok || !dec.Changed {
		t.Errorf("a kept share larger than the limit allows: %v", dec.Shares.Messages)
	}
	// The withhold counts the kept broker as full.
	use = []Use{{Broker: "r2", Messages: 2500}, {Broker: "r3", Messages: 2500}, {Broker: "r4", Messages: 2500}}
	dec = DecideKeeping(lim(10000), use, fixed, Shares{Messages: map[string]int64{"r1": 2500, "r2": 2500, "r3": 2500, "r4": 2500}, At: t0}, t0)
	if !dec.Withhold {
		t.Errorf("7,500 at r2..r4 and r1's kept 2,500: want withhold")
	}
}

func TestAdsRoundTrip(t *testing.T) {
	ads := map[string]Ad{
		"q1": {Router: "a", Limits: Limits{MaxMessages: 100, MaxBytes: 4000, Overflow: DropHead}, Span: []string{"r1", "r2"},
			Use: []Use{{Broker: "r2", Messages: 3, Bytes: 30, Consumers: 1}},
			Shares: &AdShares{Limits: Limits{MaxMessages: 100, MaxBytes: 4000, Overflow: DropHead}, Messages: map[string]int64{"r1": 60, "r2": 40},
				Bytes: map[string]int64{"r1": 2000, "r2": 2000}, Withhold: true}},
		"q2": {Router: "a", Limits: lim(10), Span: []string{"r1"}},
	}
	v, left := EncodeAds(ads)
	if left != 0 {
		t.Fatalf("left out %d", left)
	}
	got, err := DecodeAds("a", v, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ads) {
		t.Errorf("round trip:\n%+v\n%+v", got, ads)
	}
	// Past the bounds: the first MaxAdDests by name.
	many := map[string]Ad{}
	for i := range MaxAdDests + 5 {
		many[fmt.Sprintf("q%03d", i)] = ads["q2"]
	}
	v, left = EncodeAds(many)
	got, err = DecodeAds("a", v, func(string) bool { return true })
	if left != 5 || err != nil || len(got) != MaxAdDests {
		t.Errorf("%d destinations: left out %d, decoded %d (%v)", len(many), left, len(got), err)
	}
}

func TestDecodeAdsRefuses(t *testing.T) {
	attached := func(b string) bool { return b != "elsewhere" }
	ok := `"limits":{"max_messages":100,"overflow":"reject-publish"},"span":["r1","r2"]`
	big := `{` + strings.Repeat(`"q`+strings.Repeat("x", 200)+`":{}, `, 200) + `}`
	many := map[string]json.RawMessage{}
	for i := range MaxAdDests + 1 {
		many[fmt.Sprint(i)] = json.RawMessage(`{` + ok + `}`)
	}
	tooMany, _ := json.Marshal(many)
	for _, tc := range []struct{ v, want string }{
		{`[1]`, "cannot unmarshal"},
		{big, "bytes, at most"},
		{string(tooMany), "65 destinations, at most 64"},
		{`{"": {` + ok + `}}`, "a destination name of 0 bytes"},
		{`{"q": {"limits":{"max_messages":100,"overflow":"reject-publish"},"span":[]}}`, "a span of 0 brokers"},
		{`{"q": {"limits":{"max_messages":100,"overflow":"reject-publish"},"span":["r2","r1"]}}`, "not sorted or repeated"},
		{`{"q": {"limits":{"max_messages":100,"overflow":"reject-publish"},"span":["r1","r1"]}}`, "not sorted or repeated"},
		{`{"q": {"limits":{"max_messages":100,"overflow":"reject-publish"},"span":["elsewhere"]}}`, `span broker "elsewhere": not one it is attached to`},
		{`{"q": {"limits":{"max_messages":-1,"max_bytes":5,"overflow":"reject-publish"},"span":["r1"]}}`, "limit -1"},
		{`{"q": {"limits":{"max_messages":9007199254740993,"overflow":"reject-publish"},"span":["r1"]}}`, "limit 9007199254740993"},
		{`{"q": {"limits":{"max_messages":1,"overflow":"reject-publish"},"span":["r1","r2"]}}`, "limit 1: 0, or 2 to 2^53"},
		{`{"q": {"limits":{"overflow":"reject-publish"},"span":["r1"]}}`, "no limit"},
		{`{"q": {"limits":{"max_messages":100,"overflow":"reject-old"},"span":["r1"]}}`, `overflow "reject-old"`},
		{`{"q": {` + ok + `,"use":{"r3":{"m":1}}}}`, `use at "r3"`},
		{`{"q": {` + ok + `,"use":{"r1":{"m":-1}}}}`, `use at "r1": -1 messages`},
		{`{"q": {` + ok + `,"shares":{"limits":{"max_messages":100,"overflow":"reject-publish"},"messages":{"r1":50,"r2":49}}}}`, "shares of messages sum to 99, not 100"},
		{`{"q": {` + ok + `,"shares":{"limits":{"max_messages":100,"overflow":"reject-publish"},"messages":{"r1":101,"r2":-1}}}}`, `shares of messages: "r2"=-1`},
		{`{"q": {` + ok + `,"shares":{"limits":{"max_messages":100,"overflow":"reject-publish"}}}}`, "shares of messages: 0 brokers for a limit of 100"},
		{`{"q": {` + ok + `,"shares":{"limits":{"max_messages":100,"overflow":"reject-publish"},"messages":{"r1":100},"bytes":{"r1":5}}}}`, "shares of bytes: 1 brokers for a limit of 0"},
	} {
		_, err := DecodeAds("x", json.RawMessage(tc.v), attached)
		if !errors.Is(err, ErrBadAd) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "router x") {
			t.Errorf("%.80s: got %v, want %q naming router x", tc.v, err, tc.want)
		}
	}
}

func FuzzDecodeAds(f *testing.F) {
	v, _ := EncodeAds(map[string]Ad{"q": {Limits: lim(100), Span: []string{"r1", "r2"}, Use: []Use{{Broker: "r2", Messages: 1}},
		Shares: even(100, "r1", "r2")}})
	f.Add([]byte(v))
	f.Add([]byte(`{"q":{"limits":{"max_bytes":5,"overflow":"drop-head"},"span":["a"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ads, err := DecodeAds("f", data, func(string) bool { return true })
		if err != nil {
			return
		}
		// What is accepted is within the bounds and re-encodes.
		if len(ads) > MaxAdDests {
			t.Fatalf("%d destinations", len(ads))
		}
		for _, a := range ads {
			if len(a.Span) > MaxAdBrokers || !a.Limits.Enforced() {
				t.Fatalf("accepted %+v", a)
			}
		}
		if _, left := EncodeAds(ads); left != 0 {
			t.Fatalf("accepted ads do not re-encode within the bounds")
		}
	})
}
