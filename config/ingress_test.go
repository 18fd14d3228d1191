package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/links"
)

const ingressBase = "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n  - {name: b, url: 'amqp://h2', profile: generic}\n" +
	"topology: {secret: 0123456789abcdef0123456789abcdef}\n"

// The ingress section's mistakes, each with the file's line and the field
// (issue 17, finding 1).
func TestIngressConfigErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"enabled without flooding", "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n" +
			"ingress:\n  enabled: true\n  allow: [{broker: a, to_broker: b, address: 'queue:q'}]\n",
			[]string{"f.yaml:4: ingress.enabled: the ingress rides on multi-hop transit, which needs link-state flooding"}},
		{"enabled, nothing allowed", ingressBase + "ingress: {enabled: true}\n",
			[]string{`f.yaml:6: ingress.allow: the ingress is enabled but allows nothing; list what may pass (e.g. {broker: rabbit1, to_broker: rabbit4, address: "exchange:orders"} and the same with address: "exchange:orders:*"; not "exchange:orders*"`}},
		{"entry fields", ingressBase + "ingress:\n  enabled: true\n  allow:\n    - {to_broker: b, address: 'queue:q'}\n    - {broker: c, to_broker: 'b c', address: 'topic:x'}\n    - {broker: '*'}\n",
			[]string{`f.yaml:9: ingress.allow[0].broker: required`,
				`f.yaml:10: ingress.allow[1].broker: "c" is not in brokers`,
				`f.yaml:10: ingress.allow[1].to_broker: "b c": use letters`,
				`f.yaml:10: ingress.allow[1].address: "topic:x": start with queue: or exchange:`,
				`f.yaml:11: ingress.allow[2].to_broker: required`,
				`f.yaml:11: ingress.allow[2].address: required`}},
		{"router-owned patterns", ingressBase + "ingress:\n  enabled: true\n  allow:\n    - {broker: a, to_broker: b, address: 'queue:fedrouter.transit.*'}\n" +
			"    - {broker: a, to_broker: b, address: 'exchange:fedrouter.control'}\n    - {broker: a, to_broker: b, address: 'queue:fedrouter.dead-letter'}\n",
			[]string{`f.yaml:9: ingress.allow[0].address: "queue:fedrouter.transit.*" names the routers' own addresses`,
				`f.yaml:10: ingress.allow[1].address: "exchange:fedrouter.control" names the routers' own`,
				`f.yaml:11: ingress.allow[2].address: "queue:fedrouter.dead-letter" names the routers' own`}},
		{"custom control address", "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n" +
			"topology: {secret: 0123456789abcdef0123456789abcdef, control_address: ctl}\ningress:\n  enabled: true\n  allow:\n    - {broker: a, to_broker: a, address: 'queue:ctl.*'}\n",
			[]string{`f.yaml:8: ingress.allow[0].address: "queue:ctl.*" names the routers' own addresses`}},
		{"bad literal address", ingressBase + "ingress:\n  enabled: true\n  allow:\n    - {broker: a, to_broker: b, address: 'queue:q:key'}\n",
			[]string{`f.yaml:9: ingress.allow[0].address: address "queue:q:key": a queue takes no key`}},
	}
	for _, c := range cases {
		if got := wantProblems(t, c.name, c.yaml, c.want); got != nil && len(got) != len(c.want) {
			t.Errorf("%s: %d problems, want %d:\n  %s", c.name, len(got), len(c.want), strings.Join(got, "\n  "))
		}
	}
}

// wantProblems parses yaml as f.yaml and checks that each of want is part
// of one of the problems reported; it returns them (nil when the file
// was not refused as a config error).
func wantProblems(t *testing.T, name, yaml string, want []string) []string {
	t.Helper()
	_, err := Parse("f.yaml", []byte(yaml))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Errorf("%s: error %v, want a config error", name, err)
		return nil
	}
	for _, w := range want {
		found := false
		for _, p := range ce.Problems {
			found = found || strings.Contains(p, w)
		}
		if !found {
			t.Errorf("%s: no problem containing %q in:\n  %s", name, w, strings.Join(ce.Problems, "\n  "))
		}
	}
	return ce.Problems
}

// Off by default; when on, each broker's rules, "*" for every broker.
func TestIngressRules(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(ingressBase))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Ingress.Enabled || cfg.IngressRules() != nil {
		t.Fatalf("ingress on by default: %+v", cfg.Ingress)
	}
	cfg, err = Parse("f.yaml", []byte(ingressBase+"ingress:\n  enabled: false\n  allow: [{broker: a, to_broker: b, address: '*'}]\n"))
	if err != nil || cfg.IngressRules() != nil {
		t.Fatalf("disabled with rules: %v %v", err, cfg.IngressRules())
	}
	cfg, err = Parse("f.yaml", []byte(ingressBase+"ingress:\n  enabled: true\n  allow:\n    - {broker: a, to_broker: b, address: 'exchange:orders:*'}\n"+
		"    - {broker: '*', to_broker: 'rabbit?', address: '*'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]links.IngressRule{
		"a": {{ToBroker: "b", Address: "exchange:orders:*"}, {ToBroker: "rabbit?", Address: "*"}},
		"b": {{ToBroker: "rabbit?", Address: "*"}},
	}
	if got := cfg.IngressRules(); !reflect.DeepEqual(got, want) {
		t.Fatalf("rules %+v, want %+v", got, want)
	}
}
