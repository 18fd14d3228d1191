package routes

import (
	"encoding/json"
	"os"
	"path/filepath"
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

func TestStateFileRoundTripAndDamage(t *testing.T) {
	path := t.TempDir() + "/state.json"
	if got, err := LoadState(path); err != nil || got != nil {
		t.Fatalf("missing file: %v %v", got, err)
	}
	specs := []Spec{Spec{Kind: KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "q", Durable: true}.WithDefaults()}
	if err := SaveState(path, specs); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(path)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], specs[0]) {
		t.Fatalf("load: %v %v", got, err)
	}
	if err := SaveState(path, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadState(path); len(got) != 0 {
		t.Fatalf("after saving none: %v", got)
	}
	for _, bad := range []string{"{", `{"version":2,"routes":[]}`, `{"version":1,"routes":[{"kind":"queue"}]}`} {
		if err := writeFile(path, bad); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadState(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming the file", bad, err)
		}
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

// A kill -9 between SaveState's create and rename leaves a temporary file
// beside the state file; the next start removes it, and only it (issue 17,
// finding 7).
func TestRemoveStateTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.routes.json")
	if err := SaveState(path, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"r.routes.json.tmp123", "r.routes.json.tmp9", "other.json.tmp1"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := RemoveStateTemp(path)
	if err != nil || n != 2 {
		t.Fatalf("removed %d, %v; want the 2 leftovers", n, err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "other.json.tmp1 r.routes.json" {
		t.Fatalf("left %v", names)
	}
	if n, err := RemoveStateTemp(filepath.Join(dir, "missing", "x.json")); n != 0 || err != nil {
		t.Fatalf("no directory: %d, %v", n, err)
	}
	// On start: Restore removes them before it reads the state file.
	leftover := filepath.Join(dir, "r.routes.json.tmp77")
	if err := os.WriteFile(leftover, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewManager(t.Context(), Options{RouterID: "r", StatePath: path})
	defer m.Stop(t.Context())
	if err := m.Restore(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("the leftover survived the start: %v", err)
	}
}

// An unknown broker given as qpid-route's user:pass@host:port is named
// in the error without its password (issue 17, finding 6).
func TestResolveErrorHidesPassword(t *testing.T) {
	m := NewManager(t.Context(), Options{RouterID: "r"})
	defer m.Stop(t.Context())
	_, err := m.Resolve("admin:s3cret@10.1.1.1:5672")
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "admin:xxxxx@10.1.1.1:5672") {
		t.Fatalf("resolve error: %v", err)
	}
}

// qpid-route's user/pass@host form (issue 27 item 3): the password is in
// neither the resolve error (the API's answer), the route's description
// (the log line) nor a validation error.
func TestQpidFormPasswordHidden(t *testing.T) {
	m := NewManager(t.Context(), Options{RouterID: "r"})
	defer m.Stop(t.Context())
	for _, addr := range []string{"guest/Secr3t@10.1.1.1:1", "guest/Secr3t@10.1.1.1"} {
		if _, err := m.Resolve(addr); err == nil || strings.Contains(err.Error(), "Secr3t") || !strings.Contains(err.Error(), "guest/xxxxx@10.1.1.1") {
			t.Fatalf("resolve %s: %v", addr, err)
		}
	}
	s := Spec{Kind: KindQueue, Src: "guest/Secr3t@h:1", Dest: "guest/Secr3t@h:1", Exchange: "x", Queue: "q"}.WithDefaults()
	if str := s.String(); strings.Contains(str, "Secr3t") {
		t.Fatalf("spec: %s", str)
	}
	if err := s.Validate(); err == nil || strings.Contains(err.Error(), "Secr3t") {
		t.Fatalf("validate: %v", err)
	}
}
