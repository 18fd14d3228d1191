package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/routes"
)

func TestParseGoodConfig(t *testing.T) {
	cfg, err := Load("../testdata/config/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RouterID != "paris-1" || len(cfg.Brokers) != 3 || time.Duration(cfg.Reconnect.Min) != 500*time.Millisecond {
		t.Fatalf("decoded %+v", cfg)
	}
	bcs, err := cfg.BrokerConfigs()
	if err != nil {
		t.Fatal(err)
	}
	if len(bcs[1].URLs) != 2 || bcs[0].Management.URL != "http://127.0.0.1:15701" || bcs[2].Profile != "proton" {
		t.Fatalf("broker configs %+v", bcs)
	}
	if d := DefaultConfig(); time.Duration(d.Reconnect.Max) != 64*time.Second || d.Log.Level != "info" || time.Duration(d.StallAfter) != time.Minute {
		t.Fatalf("defaults %+v", d)
	}
}

func TestBadConfigsNameFileLineAndProblem(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown key", "router_id: r\nbrokers:\n  - name: a\n    url: amqp://h\n    profile: generic\n    colour: red\n",
			[]string{`f.yaml:6: unknown key "colour"`}},
		{"missing id and brokers", "log:\n  level: info\n",
			[]string{"f.yaml: router_id is required", "f.yaml: no brokers configured"}},
		{"bad broker", "router_id: r\nbrokers:\n  - name: a\n    url: http://h\n    profile: activemq\n  - name: a\n    url: amqp://h\n    urls: [amqp://x]\n    profile: generic\n",
			[]string{`f.yaml:3: broker "a": URL "http://h": scheme must be amqp or amqps`, `f.yaml:3: broker "a": unknown broker profile "activemq"`,
				`f.yaml:6: broker "a" is defined twice (also at f.yaml:3)`, `f.yaml:6: broker "a": give url or urls, not both`}},
		{"bad duration", "router_id: r\nreconnect:\n  min: soon\n", []string{`f.yaml:3: "soon" is not a duration`}},
		{"unknown key and bad broker reported together", "router_id: r\nbrokers:\n  - {name: a, url: 'http://x', profile: generic}\nfoo: 1\n",
			[]string{`f.yaml:3: broker "a": URL "http://x": scheme`, `f.yaml:4: unknown key "foo"`}},
		{"bad log", "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\nlog:\n  level: loud\n", []string{`f.yaml:4: log.level "loud"`}},
		{"negative route series", "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\nmetrics:\n  route_series: -1\n", []string{`f.yaml:4: metrics.route_series -1: want 0 (no per-route series) or more`}},
		{"short stall_after", "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\nstall_after: 10ms\n", []string{"f.yaml:4: stall_after 10ms: want 1s or more"}},
		{"reconnect order", "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\nreconnect: {min: 10s, max: 1s}\n", []string{"f.yaml:4: reconnect: need 0 < min <= max"}},
		{"not yaml", "router_id: [\n", []string{"f.yaml:"}},
		{"tls pair", "router_id: r\nbrokers:\n  - name: a\n    url: amqps://h\n    profile: generic\n    tls: {cert_file: c.pem}\n", []string{`f.yaml:3: broker "a": tls: cert file and key file go together`}},
	}
	for _, c := range cases {
		_, err := Parse("f.yaml", []byte(c.yaml))
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not say %q:\n%v", c.name, w, err)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n"))
	f.Add([]byte("router_id: [\n"))
	f.Add([]byte(routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, outcome_timeout: 45s}", "admin: {listen: ':1'}")))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err == nil && (cfg.RouterID == "" || len(cfg.Brokers) == 0) {
			t.Fatalf("accepted an incomplete config: %+v", cfg)
		}
	})
}

// routeConfig is a valid router with brokers a and b (lines 1-4) and the
// given lines from line 5 on.
func routeConfig(lines ...string) string {
	return "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n  - {name: b, url: 'amqp://h2', profile: generic}\n" +
		strings.Join(lines, "\n") + "\n"
}

// TestBadRouteAndAdminConfigs checks the whole problem list, so each
// mistake is reported once, at its line, with the route named.
func TestBadRouteAndAdminConfigs(t *testing.T) {
	const q = "b(ex=x) <= a(queue=q)"
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown key in a route",
			routeConfig("routes:", "  - kind: queue", "    src: a", "    dest: b", "    exchange: x", "    queue: q", "    colour: red"),
			[]string{`f.yaml:11: unknown key "colour"`}},
		{"dynamic route with a key, divert on a queue route",
			routeConfig("routes:", "  - {kind: dynamic, src: a, dest: b, exchange: x, key: k}", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, divert_bindings: true}"),
			[]string{`f.yaml:6: route b(ex=x) <= a(ex=x) dynamic: a dynamic route takes no queue, key or dest_exchange: the destination's bindings decide what crosses`,
				`f.yaml:7: route b(ex=x) <= a(queue=q): divert_bindings applies to dynamic routes only`}},
		{"bad no_path, per route and router-wide",
			routeConfig("no_path: [hold, reject]", "routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, no_path: [reroute]}"),
			[]string{`f.yaml:5: no_path step 1 "hold" lasts for good: the steps after it would never run (give it a duration)`,
				`f.yaml:7: route b(ex=x) <= a(queue=q): no_path reroute needs link-state flooding: set topology.secret`}},
		{"reroute after another step, reroute on a dynamic route",
			routeConfig("topology: {secret: 0123456789abcdef0123456789abcdef}", "routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, no_path: [hold 1m, reroute]}",
				"  - {kind: dynamic, src: a, dest: b, exchange: x, no_path: [reroute]}"),
			[]string{`f.yaml:7: route b(ex=x) <= a(queue=q): no_path step 2 "reroute": reroute comes first and takes no duration (it lasts while an alternative path exists; the steps after it apply when none does)`,
				`f.yaml:8: route b(ex=x) <= a(ex=x) dynamic: no_path reroute applies to queue and exchange routes (a dynamic route follows demand along shortest paths already)`}},
		{"links: without flooding, unknown broker, a loop, twice",
			routeConfig("links:", "  - {between: [a, zz]}", "  - {between: [a, a]}", "  - {between: [a, b], cost: 3}", "  - {between: [b, a]}"),
			[]string{`f.yaml:6: link a-zz: links carry multi-hop transit, which needs link-state flooding: set topology.secret`,
				`f.yaml:6: link a-zz: broker "zz" is not in brokers`,
				`f.yaml:7: link a-a: links carry multi-hop transit, which needs link-state flooding: set topology.secret`,
				`f.yaml:7: link a-a: a link joins two different brokers`,
				`f.yaml:8: link a-b: links carry multi-hop transit, which needs link-state flooding: set topology.secret`,
				`f.yaml:9: link b-a: links carry multi-hop transit, which needs link-state flooding: set topology.secret`,
				`f.yaml:9: link b-a: defined twice (also at f.yaml:8)`}},
		{"remote destination: dynamic, bad name",
			routeConfig("topology: {secret: 0123456789abcdef0123456789abcdef, max_hops: 0}", "routes:", "  - {kind: dynamic, src: a, dest: far, exchange: x}", "  - {kind: queue, src: a, dest: 'h:5672', exchange: x, queue: q}"),
			[]string{`f.yaml:5: topology: max_hops 0: want 1..255`,
				`f.yaml:7: route far(ex=x) <= a(ex=x) dynamic: broker "far" is not in brokers: a dynamic route needs both brokers attached`,
				`f.yaml:8: route h:5672(ex=x) <= a(queue=q): destination broker "h:5672": want a broker name (letters, digits, '.', '_' and '-')`}},
		{"unknown data path",
			routeConfig("data_path: turbo"),
			[]string{`f.yaml:5: data_path "turbo": want engine`}},
		{"data_path go-amqp is gone",
			routeConfig("data_path: go-amqp"),
			[]string{`f.yaml:5: data_path "go-amqp": go-amqp is no longer a data path (every route runs on the engine); remove data_path or say engine`}},
		{"connections out of range",
			"router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic, connections: 17}\n  - {name: b, url: 'amqp://h2', profile: generic, connections: -1}\n",
			[]string{`f.yaml:3: broker "a": connections 17: want 1..16 (default 1)`, `f.yaml:4: broker "b": connections -1: want 1..16 (default 1)`}},
		{"broker not in brokers",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: zz, exchange: x, queue: q}"),
			[]string{`f.yaml:6: route zz(ex=x) <= a(queue=q): broker "zz" is not in brokers (a broker this router is not attached to can be a destination only with link-state flooding: set topology.secret)`}},
		{"from a broker to itself",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: a, exchange: x, queue: q}"),
			[]string{`f.yaml:6: route a(ex=x) <= a(queue=q): source and destination are the same broker "a": a route from a broker to itself is refused`}},
		{"queue route without queue",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x}"),
			[]string{`f.yaml:6: route b(ex=x) <= a(queue=): a queue route needs the source queue`}},
		{"exchange route with a queue",
			routeConfig("routes:", "  - {kind: exchange, src: a, dest: b, exchange: x, key: k, queue: q}"),
			[]string{`f.yaml:6: route b(ex=x) <= a(ex=x key=k): an exchange route takes no queue (did you mean kind: queue?)`}},
		{"bad kind",
			routeConfig("routes:", "  - {kind: topic, src: a, dest: b, exchange: x, key: k}"),
			[]string{`f.yaml:6: route b(ex=x) <= a(ex=x key=k): kind "topic": want queue, exchange or dynamic`}},
		{"bad on_reject",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, on_reject: drop}"),
			[]string{`f.yaml:6: route ` + q + `: on_reject "drop": want reject or dead-letter`}},
		{"dead-letter without a queue",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, on_reject: dead-letter}"),
			[]string{`f.yaml:6: route ` + q + `: on_reject dead-letter needs dead_letter_queue (a queue on the source broker)`}},
		{"dead_letter_queue without dead-letter",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, dead_letter_queue: dlq}"),
			[]string{`f.yaml:6: route ` + q + `: dead_letter_queue is set but neither on_reject nor no_path dead-letters; set on_reject: dead-letter`}},
		{"negative credit", // 0 is not an error: it means the default
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, credit: -1}"),
			[]string{`f.yaml:6: route ` + q + `: credit -1: want 1..10000`}},
		{"credit too big",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, credit: 10001}"),
			[]string{`f.yaml:6: route ` + q + `: credit 10001: want 1..10000`}},
		{"route defined twice", // same identity; options do not matter
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q}", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, credit: 9}"),
			[]string{`f.yaml:7: route ` + q + `: defined twice (also at f.yaml:6)`}},
		{"bad outcome_timeout",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, outcome_timeout: soon}"),
			[]string{`f.yaml:6: "soon" is not a duration (e.g. 2s, 1m)`}},
		{"outcome_timeout within the idle timeout",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, outcome_timeout: 5s}"),
			[]string{`f.yaml:6: route ` + q + `: outcome_timeout 5s must be longer than the connection idle timeout 10s: a silent network must end as a lost connection (the source redelivers), not as unroutable messages`}},
		{"negative outcome_timeout",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, outcome_timeout: -1s}"),
			[]string{`f.yaml:6: route ` + q + `: outcome_timeout must be positive`}},
		{"two problems in two routes",
			routeConfig("routes:", "  - {kind: queue, src: a, dest: b, exchange: x, queue: q, cost: -2}", "  - {kind: exchange, src: b, dest: a, key: k}"),
			[]string{`f.yaml:6: route ` + q + `: cost -2: want 1 or more`, `f.yaml:7: route a(ex=) <= b(ex= key=k): the exchange is missing`}},
		{"admin.listen without a port",
			routeConfig("admin:", "  listen: localhost"),
			[]string{`f.yaml:5: admin.listen "localhost": want host:port (or off)`}},
		{"token and token_file",
			routeConfig("log: {level: info}", "admin:", "  token: s3cret-s3cret-s3cret", "  token_file: /etc/fedrouter/token"),
			[]string{`f.yaml:6: admin: give token or token_file, not both`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(c.yaml))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *Error\n%s", err, c.yaml)
			}
			if !slices.Equal(ce.Problems, c.want) {
				t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(ce.Problems, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

func TestRouteSpecsResolveDefaults(t *testing.T) {
	cfg, err := Load("../testdata/config/routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	specs := cfg.RouteSpecs()
	if len(specs) != 2 {
		t.Fatalf("%d routes, want 2", len(specs))
	}
	want := routes.Spec{Kind: routes.KindQueue, Src: "lyon", Dest: "nice", Exchange: "amq.direct", Queue: "orders",
		Credit: routes.DefaultCredit, Cost: 1, OnReject: routes.RejectAtSource, OutcomeTimeout: 30 * time.Second}
	if !reflect.DeepEqual(specs[0], want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", specs[0], want)
	}
	want = routes.Spec{Kind: routes.KindExchange, Src: "lyon", Dest: "nice", Exchange: "amq.topic", Key: "stock.#",
		DestExchange: "lyon.stock", Durable: true, Ack: 10, Credit: 50, Push: true, Cost: 3,
		OnReject: routes.DeadLetter, DeadLetterQueue: "fedrouter.dlq", OutcomeTimeout: 45 * time.Second}
	if !reflect.DeepEqual(specs[1], want) {
		t.Errorf("every option:\n got %+v\nwant %+v", specs[1], want)
	}
	if cfg.Admin.Listen != "127.0.0.1:9696" {
		t.Errorf("admin.listen %q", cfg.Admin.Listen)
	}
	if tok, err := cfg.AdminToken(); err != nil || tok != "s3cret-s3cret-s3cret" {
		t.Errorf("admin token %q, %v", tok, err)
	}
}

func TestStatePath(t *testing.T) {
	cfg, err := Load("../testdata/config/routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A relative state_file is taken from the configuration file's directory,
	// not the working directory: the daemon's cwd is no business of the file.
	if got, want := cfg.StatePath(), filepath.Join("..", "testdata", "config", "state", "lyon.routes.json"); got != want {
		t.Errorf("relative: %q, want %q", got, want)
	}
	abs := filepath.Join(t.TempDir(), "r.json")
	cases := []struct{ file, stateFile, want string }{
		{"/etc/fedrouter/router.yaml", "", "/etc/fedrouter/fedrouter-r.routes.json"},
		{"/etc/fedrouter/router.yaml", abs, abs},
		{"/etc/fedrouter/router.yaml", "../var/r.json", "/etc/var/r.json"},
		{"router.yaml", "", "fedrouter-r.routes.json"},
	}
	for _, c := range cases {
		y := routeConfig()
		if c.stateFile != "" {
			y += "state_file: " + c.stateFile + "\n"
		}
		cfg, err := Parse(c.file, []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.StatePath(); got != c.want {
			t.Errorf("file %s, state_file %q: %q, want %q", c.file, c.stateFile, got, c.want)
		}
	}
}

func TestAdminDefaultsAndTokenFile(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(routeConfig()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Admin.Listen != DefaultAdminListen || DefaultAdminListen != "127.0.0.1:9595" {
		t.Errorf("default admin.listen %q", cfg.Admin.Listen)
	}
	if _, err := Parse("f.yaml", []byte(routeConfig("admin: {listen: 'off'}"))); err != nil {
		t.Errorf("listen off: %v", err)
	}
	tf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte("from-file-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Parse("f.yaml", []byte(routeConfig("admin: {token_file: '"+tf+"'}")))
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := cfg.AdminToken(); err != nil || tok != "from-file-0123456789" {
		t.Errorf("token_file: %q, %v (want the file's content, trimmed)", tok, err)
	}
	cfg, _ = Parse("f.yaml", []byte(routeConfig("admin: {token_file: '"+tf+".missing'}")))
	if _, err := cfg.AdminToken(); err == nil || !strings.Contains(err.Error(), "admin.token_file") {
		t.Errorf("missing token_file: %v", err)
	}
}

func TestStaticBindings(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte("router_id: r\nbrokers:\n  - name: p\n    url: amqp://h\n    profile: proton\n    bindings:\n      - {exchange: orders, key: 'eu.#'}\n      - {exchange: orders, key: us}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cfg.StaticDemand()); got != "map[p:map[orders:[eu.# us]]]" {
		t.Fatalf("static demand %s", got)
	}
	_, err = Parse("f.yaml", []byte("router_id: r\nbrokers:\n  - name: p\n    url: amqp://h\n    profile: proton\n    bindings: [{key: k}]\n"))
	if err == nil || !strings.Contains(err.Error(), `f.yaml:3: broker "p": a binding needs an exchange`) {
		t.Fatalf("binding without exchange: %v", err)
	}
}
