package main

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// mapLineFields are the fields of every line of `route map --json`, as
// docs/cli.md (JSON output) lists them.
var mapLineFields = []string{"bidirectional", "dest", "dynamic", "exchange", "line", "routes", "src"}

// route map --json is what docs/cli.md says: an array ([] when there are
// no routes), each line an object with every documented field, the route
// ids strings.
func TestCLIRouteMapJSONAsDocumented(t *testing.T) {
	h := startRouterAPI(t)
	out, _ := h.run(0, "route", "map", "--json")
	if strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty route map --json: %q, want []", out)
	}
	h.run(0, "route", "add", "b", "a", "amq.topic", "news.#")
	h.run(0, "route", "add", "a", "b", "amq.topic", "news.#")
	h.run(0, "dynamic", "add", "c", "a", "amq.match")
	out, _ = h.run(0, "route", "map", "--json")
	var lines []map[string]any
	if err := json.Unmarshal([]byte(out), &lines); err != nil || len(lines) != 2 {
		t.Fatalf("route map --json: %v\n%s", err, out)
	}
	for _, l := range lines {
		var keys []string
		for k := range l {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !reflect.DeepEqual(keys, mapLineFields) {
			t.Errorf("line fields %v, want %v", keys, mapLineFields)
		}
		for _, id := range l["routes"].([]any) {
			if s, ok := id.(string); !ok || !routeID.MatchString(s) {
				t.Errorf("route id %#v: want a string of 12 hexadecimal digits", id)
			}
		}
	}
	want := []map[string]any{
		{"line": "a(ex=amq.topic) <=> b(ex=amq.topic key=news.#)", "dest": "a", "src": "b", "bidirectional": true, "dynamic": false, "exchange": "amq.topic"},
		{"line": "c <= a", "dest": "c", "src": "a", "bidirectional": false, "dynamic": true, "exchange": "amq.match"},
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %#v, want %#v", i, k, lines[i][k], v)
			}
		}
	}
	if n := len(lines[0]["routes"].([]any)); n != 2 {
		t.Errorf("bidirectional line with %d routes, want 2", n)
	}
}
