package routespec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSpecJSONRoundTrip(t *testing.T) {
	in := Spec{Kind: KindExchange, Dest: "b", Src: "a", Exchange: "x", Key: "k", OutcomeTimeout: 1500 * time.Millisecond}.WithDefaults()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"outcome_timeout":"1.5s"`) {
		t.Fatalf("outcome_timeout not a duration string: %s", b)
	}
	var out Spec
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip: %+v != %+v", out, in)
	}
	for _, bad := range []string{`{"kind":"queue","credits":5}`, `{"outcome_timeout":"soon"}`} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	ok := Spec{Kind: KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "q"}.WithDefaults()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mut  func(*Spec)
		want string
	}{
		{"self", func(s *Spec) { s.Dest = "a" }, "same broker"},
		{"no queue", func(s *Spec) { s.Queue = "" }, "source queue"},
		{"kind", func(s *Spec) { s.Kind = "topic" }, `kind "topic"`},
		{"credit", func(s *Spec) { s.Credit = MaxCredit + 1 }, "credit"},
		{"dead letter without queue", func(s *Spec) { s.OnReject = DeadLetter }, "dead_letter_queue"},
		{"queue on exchange route", func(s *Spec) { s.Kind = KindExchange }, "takes no queue"},
		{"policy", func(s *Spec) { s.OnReject = "drop" }, `on_reject "drop"`},
		{"exchange and dest_queue", func(s *Spec) { s.DestQueue = "q" }, "not both"},
		{"dest_queue on exchange route", func(s *Spec) { s.Kind, s.Queue, s.Exchange, s.DestQueue = KindExchange, "", "", "q" }, "dest_queue applies to queue routes only"},
		{"max_moves without dest_queue", func(s *Spec) { s.MaxMoves = 2 }, "max_moves 2"},
		{"negative max_moves", func(s *Spec) { s.Exchange, s.DestQueue, s.MaxMoves = "", "q", -1 }, "max_moves -1"},
		{"long dest_queue", func(s *Spec) { s.Exchange, s.DestQueue = "", strings.Repeat("q", MaxNameLen+1) }, "dest_queue is 256 bytes long"},
	}
	for _, c := range cases {
		s := ok
		c.mut(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", c.name, err, c.want)
		}
	}
	// A global destination's flow: into a queue, its own identity (the
	// exchange route's ids stay as they were).
	flow := Spec{Kind: KindQueue, Dest: "b", Src: "a", Queue: "q", DestQueue: "q", MaxMoves: 2}.WithDefaults()
	if err := flow.Validate(); err != nil {
		t.Fatal(err)
	}
	if flow.ID() == (Spec{Kind: KindQueue, Dest: "b", Src: "a", Queue: "q"}).ID() || ok.ID() != (Spec{Kind: KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "q"}).ID() {
		t.Error("dest_queue is not part of a route's identity, or changed other routes' ids")
	}
	if got := flow.String(); got != "b(queue=q) <= a(queue=q) moves<=2" {
		t.Errorf("flow renders as %q", got)
	}
}
