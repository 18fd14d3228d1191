package router

import (
	"strings"
	"testing"
	"time"
)

func TestParseGoodConfig(t *testing.T) {
	cfg, err := LoadConfig("../testdata/config/good.yaml")
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
	if d := DefaultConfig(); time.Duration(d.Reconnect.Max) != 64*time.Second || d.Log.Level != "info" {
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
		{"reconnect order", "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\nreconnect: {min: 10s, max: 1s}\n", []string{"f.yaml:4: reconnect: need 0 < min <= max"}},
		{"not yaml", "router_id: [\n", []string{"f.yaml:"}},
		{"tls pair", "router_id: r\nbrokers:\n  - name: a\n    url: amqps://h\n    profile: generic\n    tls: {cert_file: c.pem}\n", []string{`f.yaml:3: broker "a": tls: cert file and key file go together`}},
	}
	for _, c := range cases {
		_, err := ParseConfig("f.yaml", []byte(c.yaml))
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

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n"))
	f.Add([]byte("router_id: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig("fuzz.yaml", data)
		if err == nil && (cfg.RouterID == "" || len(cfg.Brokers) == 0) {
			t.Fatalf("accepted an incomplete config: %+v", cfg)
		}
	})
}
