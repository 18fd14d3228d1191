package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/store/storetest"
)

// durationKeys are the JSON fields that hold a duration, in any listing:
// each is a Go duration string (docs/cli.md, JSON output).
var durationKeys = map[string]bool{"retry_in": true, "outcome_timeout": true, "age": true, "heartbeat": true,
	"lease": true, "beat_ago": true, "last_renewal": true}

// jsonShape checks one listing's --json output as docs/cli.md promises
// it: valid JSON, no null anywhere (an empty list is []), durations as
// Go duration strings (and no field named for a unit, as age_ns), ids as
// strings and every number within what a JavaScript number holds
// exactly. It returns the duration fields it met.
func jsonShape(t *testing.T, what, out string) map[string]bool {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s --json: not JSON: %v\n%s", what, err, out)
	}
	if dec.More() {
		t.Fatalf("%s --json: more than one JSON value:\n%s", what, out)
	}
	seen := map[string]bool{}
	walkJSON(t, what, "", v, seen)
	return seen
}

func walkJSON(t *testing.T, what, path string, v any, seen map[string]bool) {
	t.Helper()
	switch v := v.(type) {
	case nil:
		t.Errorf("%s --json: %s is null", what, path)
	case []any:
		for i, e := range v {
			walkJSON(t, what, fmt.Sprintf("%s[%d]", path, i), e, seen)
		}
	case map[string]any:
		for k, e := range v {
			checkField(t, what, path+"."+k, k, e, seen)
			walkJSON(t, what, path+"."+k, e, seen)
		}
	case json.Number:
		if f, err := v.Float64(); err != nil || math.Abs(f) > 1<<53-1 {
			t.Errorf("%s --json: %s = %s: past what a JavaScript number holds exactly", what, path, v)
		}
	}
}

func checkField(t *testing.T, what, path, key string, v any, seen map[string]bool) {
	t.Helper()
	for _, unit := range []string{"_ns", "_ms", "_us", "_seconds", "_millis"} {
		if strings.HasSuffix(key, unit) {
			t.Errorf("%s --json: %s: a duration in a unit of its own, want a Go duration string", what, path)
		}
	}
	if durationKeys[key] {
		seen[key] = true
		if s, ok := v.(string); !ok {
			t.Errorf("%s --json: %s = %#v: want a Go duration string", what, path, v)
		} else if _, err := time.ParseDuration(s); err != nil {
			t.Errorf("%s --json: %s = %q: %v", what, path, s, err)
		}
	}
	if key == "id" || key == "instance" {
		if _, ok := v.(string); !ok {
			t.Errorf("%s --json: %s = %#v: want a string", what, path, v)
		}
	}
}

// cliJSON runs a listing with --json; its stdout only (a listing prints
// nothing else on success).
func (p *routerProc) cliJSON(t *testing.T, args ...string) string {
	t.Helper()
	out, code := p.cli(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%v --json: exit %d:\n%s", args, code, out)
	}
	return out
}

// Every listing's --json against a real router process: route list,
// route map, link list, broker list, topology, destination list and
// reload, empty and not.
func TestListingsJSONShape(t *testing.T) {
	parallelE2E(t, &linkStateLane)
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	prefix := strings.ReplaceAll(brokertest.UniqueName(t, "h-progress"), "/", "-")
	control := fmt.Sprintf("fedrouter.control.hprog%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dropControl(bs, control, "json-e2e") })
	yaml := fmt.Sprintf(`router_id: json-e2e
brokers:
  - {name: r1, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
  - {name: r2, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
  - {name: gone, url: "amqp://127.0.0.1:1", profile: generic}
topology: {secret: %q, refresh: 1s, max_age: 3s, control_address: %s}
destinations:
  - {name: %q}
reconnect: {min: 5s, max: 10s}
admin: {listen: "127.0.0.1:0"}
log: {level: info, format: json}
`, bs[0].URL, bs[0].MgmtURL, bs[1].URL, bs[1].MgmtURL, e2eSecret, control, prefix+".*")
	path := filepath.Join(t.TempDir(), "router.yaml")
	if err := os.WriteFile(path, []byte(withAdminPort(t, yaml)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startRouter(t, path)

	// Empty listings are [], not null.
	for _, args := range [][]string{{"route", "list"}, {"route", "map"}} {
		if out := p.cliJSON(t, args...); strings.TrimSpace(out) != "[]" {
			t.Errorf("%v --json with no routes: %q, want []", args, out)
		}
	}
	out := p.cliJSON(t, "destination", "list")
	jsonShape(t, "destination list", out)
	if !strings.Contains(out, `"destinations": []`) {
		t.Errorf("destination list --json with none: want \"destinations\": []\n%s", out)
	}

	if out, code := p.cli("queue", "add", "r2", "r1", "amq.direct", prefix+".q"); code != 0 {
		t.Fatalf("queue add: exit %d: %s", code, out)
	}
	// The unreachable broker is Waiting with its next attempt scheduled,
	// and the topology has heard its own router.
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if out := p.cliJSON(t, "broker", "list"); !strings.Contains(out, `"retry_in"`) {
			return fmt.Errorf("no retry scheduled for gone:\n%s", out)
		}
		if out := p.cliJSON(t, "topology"); !strings.Contains(out, `"age"`) {
			return fmt.Errorf("no router heard:\n%s", out)
		}
		return nil
	})
	want := map[string][]string{
		"route list":  {"outcome_timeout"},
		"route map":   nil,
		"link list":   nil,
		"broker list": {"retry_in"},
		"topology":    {"age"},
		"reload":      nil,
	}
	for what, keys := range want {
		out := p.cliJSON(t, strings.Fields(what)...)
		seen := jsonShape(t, what, out)
		for _, k := range keys {
			if !seen[k] {
				t.Errorf("%s --json has no %s:\n%s", what, k, out)
			}
		}
	}
	// reload: its lists are [] when nothing changed.
	if out := p.cliJSON(t, "reload"); !strings.Contains(out, `"routes_added": []`) || !strings.Contains(out, `"brokers_redialed": []`) {
		t.Errorf("reload --json with nothing changed:\n%s", out)
	}
}

// cluster status --json (and route list in a cluster, with holder and
// epoch) in the same shape, from a one-member cluster on PostgreSQL.
func TestClusterStatusJSONShape(t *testing.T) {
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	p := clusterMember(t, "m1", clusterName(t), storetest.Schema(t), bs, "500ms", "2s")
	if out, code := p.cli("queue", "add", "r2", "r1", "amq.direct", brokertest.UniqueName(t, "h-progress")); code != 0 {
		t.Fatalf("queue add: exit %d: %s", code, out)
	}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if out := p.cliJSON(t, "cluster", "status"); !strings.Contains(out, `"joined": true`) {
			return fmt.Errorf("the member has not joined:\n%s", out)
		}
		return nil
	})
	seen := jsonShape(t, "cluster status", p.cliJSON(t, "cluster", "status"))
	for _, k := range []string{"heartbeat", "lease", "beat_ago", "last_renewal"} {
		if !seen[k] {
			t.Errorf("cluster status --json has no %s", k)
		}
	}
	jsonShape(t, "route list (cluster)", p.cliJSON(t, "route", "list"))
}

// dropControl deletes the control exchange and the router's inbox a
// topology test left on the brokers.
func dropControl(bs []brokertest.Broker, control, router string) {
	for _, b := range bs {
		m, err := famqp.NewRabbitManagement(b.Config())
		if err != nil {
			continue
		}
		_ = m.DeleteQueue(context.Background(), control+"."+router)
		_ = m.DeleteExchange(context.Background(), control)
		m.Close()
	}
}
