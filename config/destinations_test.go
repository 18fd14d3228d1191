package config

import (
	"strings"
	"testing"
	"time"
)

const destBase = "router_id: r\nbrokers:\n  - {name: r1, url: 'amqp://h', profile: rabbitmq}\n  - {name: r2, url: 'amqp://h2', profile: rabbitmq}\n" +
	"  - {name: p1, url: 'amqp://h3', profile: proton}\n"

// The destinations: entries' mistakes, each with its line and field
// (issue 16: bad input).
func TestDestinationConfigErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"name", destBase + "destinations:\n  - {brokers: [r1]}\n  - {name: " + strings.Repeat("q", 256) + "}\n",
			[]string{"f.yaml:7: destinations[0].name: required", "f.yaml:8: destinations[1].name: 256 bytes long, at most 255"}},
		{"the routers' own queues", destBase + "destinations:\n  - {name: 'fedrouter.transit.*'}\n  - {name: '*'}\n  - {name: 'fed*'}\n  - {name: fedrouter.control}\n",
			[]string{`f.yaml:7: destinations[0].name: "fedrouter.transit.*" can name the routers' own queues`,
				`f.yaml:8: destinations[1].name: "*" can name`, `f.yaml:9: destinations[2].name: "fed*" can name`,
				`f.yaml:10: destinations[3].name: "fedrouter.control" can name`}},
		{"brokers", destBase + "destinations:\n  - {name: q, brokers: [p1, nope]}\n",
			[]string{"f.yaml:7: destinations[0].brokers: p1 (profile proton) cannot list or create queues",
				`f.yaml:7: destinations[0].brokers: "nope" is not in brokers`}},
		{"properties the profile cannot set", destBase + "destinations:\n  - {name: q, arguments: {x-foo: 1, x-max-length: -1, x-queue-type: 3}, max_length: 5}\n",
			[]string{"f.yaml:7: destinations[0].arguments: x-foo: not a queue argument the rabbitmq profile can set (known: x-dead-letter-exchange",
				"x-max-length: -1 is not a non-negative integer", "x-queue-type: 3 is not a non-empty string"}},
		{"twice", destBase + "destinations:\n  - {name: q, max_length: 5, arguments: {x-max-length: 5}}\n  - {name: q}\n",
			[]string{"f.yaml:7: destinations[0].arguments: x-max-length given twice (max_length and arguments)",
				`f.yaml:8: destinations[1].name: "q" is already the name of destinations[0]`}},
		{"idle under the statistics interval", destBase + "destinations:\n  - {name: q, idle: 3s, confirm_delete: -1s}\n",
			[]string{"f.yaml:7: destinations[0].idle: 3s: at least 10s", "f.yaml:7: destinations[0].confirm_delete: -1s: want a positive duration"}},
		{"moves", destBase + "destinations:\n  - {name: q, max_hops: -1, settle: 1s}\n  - {name: r, max_hops: 101}\n",
			[]string{"f.yaml:7: destinations[0].max_hops: -1: want 1 to 100", "f.yaml:7: destinations[0].settle: 1s: at least 2s",
				"f.yaml:8: destinations[1].max_hops: 101: want 1 to 100"}},
		{"limits", destBase + "destinations:\n  - {name: q, brokers: [r1, r2], limits: {max_messages: 1, max_bytes: -5, overflow: drop-tail}}\n",
			[]string{"f.yaml:7: destinations[0].limits.max_messages: 1 is less than the 2 brokers of the span: each broker's share is at least 1",
				"f.yaml:7: destinations[0].limits.max_bytes: -5: want 1 or more", `f.yaml:7: destinations[0].limits.overflow: "drop-tail": want reject-publish or drop-head`}},
		{"limits not a number at all", destBase + "destinations:\n  - {name: r, limits: {max_bytes: [1]}}\n", []string{"f.yaml:7: want a whole number, not a list"}},
		{"limits, one at a time", destBase + "destinations:\n  - {name: r, limits: {max_messages: abc}}\n  - {name: s, limits: {}}\n" +
			"  - {name: t, limits: {max_producers: 10}}\n  - {name: u, limits: {max_messages: 10}, arguments: {x-overflow: drop-head}}\n" +
			"  - {name: v, brokers: [p1], limits: {max_messages: 10}}\n",
			[]string{`f.yaml:7: destinations[0].limits.max_messages: "abc" is not a whole number`,
				"f.yaml:8: destinations[1].limits: none set: want max_messages, max_bytes or max_producers",
				"f.yaml:9: destinations[2].limits.max_producers: not enforceable with profile rabbitmq (RabbitMQ has no per-queue producer limit)",
				"f.yaml:10: destinations[3].limits.overflow: reject-publish, but arguments set x-overflow drop-head",
				"f.yaml:11: destinations[4].limits.max_messages: not enforceable with profile proton"}},
		{"no capable broker", "router_id: r\nbrokers:\n  - {name: p1, url: 'amqp://h3', profile: proton}\ndestinations:\n  - {name: q}\n",
			[]string{"f.yaml:5: destinations[0].brokers: no broker of this router can hold global destinations"}},
	}
	for _, c := range cases {
		wantProblems(t, c.name, c.yaml, c.want)
	}
}

// Defaults: the span is every rabbitmq broker, 30s to confirm a deletion,
// 2m idle; properties set make the destination's own (durable by default),
// none leave them to the first instance.
func TestGlobalDestinations(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(destBase+"destinations:\n  - {name: 'orders.*', max_length: 100, message_ttl: 1m}\n"+
		"  - {name: jobs, brokers: [r2], durable: false, delete_nonempty: true, confirm_delete: 5s, idle: 10s, max_hops: 5, settle: 3s}\n"+
		"  - {name: free, follow_consumers: false, limits: {max_messages: 10_000, max_bytes: 1000000, overflow: drop-head}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	es := cfg.GlobalDestinations()
	if len(es) != 3 {
		t.Fatalf("%d entries", len(es))
	}
	o := es[0]
	if strings.Join(o.Brokers, ",") != "r1,r2" || o.ConfirmDelete != 30*time.Second || o.Idle != 2*time.Minute || o.Props == nil ||
		o.Props.String() != "durable=true x-max-length=100 x-message-ttl=60000" || !o.Follow || o.MaxHops != 2 || o.Settle != 5*time.Second {
		t.Errorf("orders.*: %+v %v", o, o.Props)
	}
	j := es[1]
	if strings.Join(j.Brokers, ",") != "r2" || !j.DeleteNonEmpty || j.ConfirmDelete != 5*time.Second || j.Idle != 10*time.Second || j.Props.String() != "durable=false" ||
		!j.Follow || j.MaxHops != 5 || j.Settle != 3*time.Second {
		t.Errorf("jobs: %+v %v", j, j.Props)
	}
	if es[2].Props != nil || es[2].Follow {
		t.Errorf("free: properties %v, want none (the first instance's)", es[2].Props)
	}
	if l := es[2].Limits; l == nil || l.String() != "max_messages=10000 max_bytes=1000000 overflow=drop-head" || es[0].Limits != nil {
		t.Errorf("free: limits %v, want max_messages=10000 max_bytes=1000000 overflow=drop-head; orders.*: %v, want none", l, es[0].Limits)
	}
}
