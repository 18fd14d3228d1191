package routes

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes/routespec"
)

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

// routespec, a leaf, keeps its own copy of the connections' idle timeout
// for the outcome_timeout rule; it must be amqp's.
func TestConnIdleTimeoutIsAMQPs(t *testing.T) {
	if routespec.ConnIdleTimeout != amqp.DefaultIdleTimeout {
		t.Fatalf("routespec.ConnIdleTimeout %s, amqp.DefaultIdleTimeout %s", routespec.ConnIdleTimeout, amqp.DefaultIdleTimeout)
	}
}
