package amqp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	goamqp "github.com/Azure/go-amqp"
)

func TestProfileTargets(t *testing.T) {
	rabbit, err := NewProfile(BrokerConfig{Name: "r", URLs: []string{"amqp://h"}, Profile: "rabbitmq"})
	if err != nil {
		t.Fatal(err)
	}
	qpid, err := NewProfile(BrokerConfig{Name: "q", URLs: []string{"amqp://h"}, Profile: "qpid"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		p    Profile
		n    Node
		want string // address, or "error"
		caps string
	}{
		{rabbit, Node{Kind: Queue, Name: "orders"}, "/amq/queue/orders", "[]"},
		{rabbit, Node{Kind: Exchange, Name: "amq.topic", Key: "eu.#"}, "/exchange/amq.topic/eu.#", "[]"},
		{rabbit, Node{Kind: Exchange, Name: "fx"}, "/exchange/fx", "[]"},
		{rabbit, Node{Kind: Control, Name: "fedrouter.control"}, "/exchange/fedrouter.control", "[]"},
		{rabbit, Node{Kind: Queue, Name: "a/b"}, "error", ""},
		{rabbit, Node{Kind: Queue, Name: "q", Key: "k"}, "error", ""},
		{protonProfile{}, Node{Kind: Queue, Name: "orders"}, "orders", "[]"},
		{protonProfile{}, Node{Kind: Exchange, Name: "fx"}, "fx", "[]"},
		{protonProfile{}, Node{Kind: Exchange, Name: "fx", Key: "k"}, "error", ""},
		{protonProfile{}, Node{Kind: Control, Name: "fedrouter.control", Key: "r2"}, "fedrouter.control.r2", "[]"},
		{protonProfile{}, Node{Kind: Control, Name: "fedrouter.control"}, "error", ""},
		{genericProfile{}, Node{Kind: Queue, Name: "orders"}, "orders", "[]"},
		{genericProfile{}, Node{Kind: Control, Name: "fedrouter.control"}, "fedrouter.control", "[topic]"},
		{artemisProfile{}, Node{Kind: Queue, Name: "orders"}, "orders", "[queue]"},
		{artemisProfile{}, Node{Kind: Exchange, Name: "prices"}, "prices", "[topic]"},
		{qpid, Node{Kind: Exchange, Name: "amq.topic", Key: "eu.x"}, "amq.topic", "[]"},
		{qpid, Node{Kind: Control, Name: "fedrouter.control"}, "fedrouter.control", "[]"},
		{qpid, Node{Kind: Transit, Name: "fedrouter.ingress"}, "fedrouter.ingress", "[]"},
		{qpid, Node{Kind: Queue, Name: ""}, "error", ""},
	}
	for _, c := range cases {
		spec, err := c.p.Target(c.n)
		got, caps := spec.Address, fmt.Sprint(spec.Capabilities)
		if err != nil {
			got, caps = "error", ""
		}
		if got != c.want || caps != c.caps {
			t.Errorf("%s.Target(%s) = %q %s (err %v), want %q %s", c.p.Name(), c.n, got, caps, err, c.want, c.caps)
		}
	}
}

func TestProfileSourcesWithoutManagement(t *testing.T) {
	ctx := context.Background()
	sub := Subscription{Name: "fedrouter.route.r1", Durable: true}
	spec, err := genericProfile{}.Source(ctx, Node{Kind: Exchange, Name: "amq.topic", Key: "eu.#"}, sub)
	if err != nil || spec.Address != "amq.topic" || len(spec.Filters) != 1 || !spec.Durable || spec.LinkName != sub.Name {
		t.Fatalf("generic keyed subscription: %+v %v", spec, err)
	}
	// Durability is asked of the source terminus (the broker's), not of
	// the receiver's own target terminus.
	if o := spec.ReceiverOptions(); o.Credit != -1 || o.Name != sub.Name || o.SourceDurability == 0 ||
		o.SourceExpiryPolicy != goamqp.ExpiryPolicyNever || o.Durability != 0 || o.ExpiryPolicy != "" || o.RequestedSenderSettleMode != nil {
		t.Fatalf("receiver options %+v", o)
	}
	spec, err = protonProfile{}.Source(ctx, Node{Kind: Control, Name: "fedrouter.control"}, Subscription{Name: "r1"})
	if err != nil || spec.Address != "fedrouter.control.r1" {
		t.Fatalf("proton control inbox: %+v %v", spec, err)
	}
	if _, err = (protonProfile{}).Source(ctx, Node{Kind: Exchange, Name: "x", Key: "k"}, sub); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("proton keyed subscription: %v", err)
	}
	spec, err = artemisProfile{}.Source(ctx, Node{Kind: Exchange, Name: "prices", Key: "it's"}, sub)
	if err != nil || len(spec.Filters) != 1 {
		t.Fatalf("artemis selector: %+v %v", spec, err)
	}
}

// qpidd routes an exchange send by the message's subject: a literal key is
// the subject, the address the bare exchange (qpidd parses no "X/K"). A
// durable subscription is a shared, durable, unsettled source.
func TestQpidProfileSpecs(t *testing.T) {
	p, err := NewProfile(BrokerConfig{Name: "q", URLs: []string{"amqp://h"}, Profile: "qpid"})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.Target(Node{Kind: Exchange, Name: "amq.topic", Key: "news.eu"})
	if err != nil || spec.Address != "amq.topic" || spec.Subject != "news.eu" {
		t.Fatalf("literal key target: %+v %v", spec, err)
	}
	if spec, _ := p.Target(Node{Kind: Exchange, Name: "amq.topic"}); spec.Subject != "" {
		t.Fatalf("keyless target sets a subject: %+v", spec)
	}
	sub := Subscription{Name: "fedrouter.route.r1", Durable: true}
	spec, err = p.Source(context.Background(), Node{Kind: Exchange, Name: "amq.topic", Key: "news.#"}, sub)
	if err != nil || spec.Address != "amq.topic" || len(spec.Filters) != 1 || fmt.Sprint(spec.Capabilities) != "[shared]" {
		t.Fatalf("durable subscription: %+v %v", spec, err)
	}
	o := spec.ReceiverOptions()
	if o.SourceDurability == 0 || o.SourceExpiryPolicy != goamqp.ExpiryPolicyNever || o.RequestedSenderSettleMode == nil ||
		*o.RequestedSenderSettleMode != goamqp.SenderSettleModeUnsettled || o.Name != sub.Name {
		t.Fatalf("durable subscription receiver options %+v", o)
	}
	spec, err = p.Source(context.Background(), Node{Kind: Exchange, Name: "amq.topic"}, Subscription{Name: "t"})
	if err != nil || spec.Capabilities != nil || spec.Durable || !spec.Unsettled {
		t.Fatalf("transient subscription: %+v %v", spec, err)
	}
}

func TestLookupProfile(t *testing.T) {
	for name, tested := range map[string]bool{"rabbitmq": true, "proton": true, "generic": true, "artemis": false, "qpid": true} {
		got, err := LookupProfile(name)
		if err != nil || got != tested {
			t.Errorf("LookupProfile(%s) = %v, %v", name, got, err)
		}
	}
	if _, err := LookupProfile("activemq"); err == nil || !contains(err.Error(), "known: artemis, generic, proton, qpid, rabbitmq") {
		t.Errorf("unknown profile error: %v", err)
	}
}

func TestManagementURLDerivedFromAMQPURL(t *testing.T) {
	cfg := BrokerConfig{Name: "r", URLs: []string{"amqp://bob:pw@10.1.2.3:5672"}, Profile: "rabbitmq", Username: "bob", Password: "pw"}
	base, user, pass, err := cfg.managementEndpoint()
	if err != nil || base != "http://10.1.2.3:15672" || user != "bob" || pass != "pw" {
		t.Fatalf("got %s %s %s %v", base, user, pass, err)
	}
}

func TestAddressRoundTrip(t *testing.T) {
	for _, n := range []Node{
		{Kind: Queue, Name: "orders"},
		{Kind: Exchange, Name: "amq.topic"},
		{Kind: Exchange, Name: "events", Key: "eu.orders"},
		{Kind: Exchange, Name: "events", Key: "a:b"},
	} {
		got, err := ParseAddress(n.Address())
		if err != nil || got != n {
			t.Errorf("ParseAddress(%q) = %+v, %v; want %+v", n.Address(), got, err, n)
		}
	}
	for _, bad := range []string{"", "orders", "topic:x", "queue:", "queue:q:key", "exchange:"} {
		if _, err := ParseAddress(bad); err == nil {
			t.Errorf("ParseAddress(%q) = nil error", bad)
		} else if !strings.Contains(err.Error(), "address") {
			t.Errorf("ParseAddress(%q): %v does not name the address", bad, err)
		}
	}
}

// A subscription's queue properties on RabbitMQ: a transient one expires
// once unused, a durable one does not; a shared one has a single active
// consumer.
func TestRabbitSubscriptionArgs(t *testing.T) {
	for _, tc := range []struct {
		sub  Subscription
		want QueueArgs
	}{
		{Subscription{Name: "s"}, QueueArgs{Arguments: map[string]any{"x-expires": subscriptionExpires}}},
		{Subscription{Name: "s", Durable: true}, QueueArgs{Durable: true}},
		{Subscription{Name: "s", Durable: true, Single: true}, QueueArgs{Durable: true, Arguments: map[string]any{"x-single-active-consumer": true}}},
	} {
		if got := subscriptionArgs(tc.sub); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: %+v, want %+v", tc.sub, got, tc.want)
		}
	}
}

// Passwords never reach a log line, an error or an API answer through a
// broker address (issue 17, finding 6): one helper hides them, whatever
// form the address takes.
func TestRedact(t *testing.T) {
	cases := map[string]string{
		"amqp://user:s3cret@h:5672/vh":   "amqp://user:xxxxx@h:5672/vh",
		"amqps://user:s3cret@h":          "amqps://user:xxxxx@h",
		"user:s3cret@10.0.0.1:5672":      "user:xxxxx@10.0.0.1:5672",
		"amqp://user:s3/c?r#et@h":        "amqp://user:xxxxx@h",
		"amqp://user:s3@cret@h":          "amqp://user:xxxxx@h",
		"amqp://h:5672":                  "amqp://h:5672",
		"amqp://user@h":                  "amqp://user@h",
		"rabbit1":                        "rabbit1",
		"amqp://user:s3cret@h:notaport%": "amqp://user:xxxxx@h:notaport%",
		// qpid-route's form, in a route's src or dest (issue 27 item 3).
		"guest/s3cret@host:1":               "guest/xxxxx@host:1",
		"guest/s3:cr@et@host":               "guest/xxxxx@host",
		"amqp://localhost:12345/s3Tail@h:1": "amqp://localhost:xxxxx@h:1",
	}
	for in, want := range cases {
		if got := Redact(in); got != want || strings.Contains(got, "s3") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	for _, raw := range []string{"http://user:s3cret@h", "amqp://user:s3cret@h:port%zz", "amqp://user:s3cret@/path",
		// A password starting with digits then '/': url.Parse takes the
		// digits for a port and the rest for a path; refused, and neither
		// part is echoed.
		"amqp://localhost:12345/s3cretTail@127.0.0.1:1"} {
		cfg := BrokerConfig{Name: "b", URLs: []string{raw}, Profile: "generic"}
		if err := cfg.Validate(); err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "12345") {
			t.Errorf("Validate(%q): %v", raw, err)
		}
	}
}

// A password over plain amqp:// to a remote host is named at start; with
// require_tls it is refused (issue 17, finding 7).
func TestPlaintextCredentials(t *testing.T) {
	b := BrokerConfig{Name: "b", Profile: "generic", URLs: []string{
		"amqp://user:s3cret@broker.example:5672", "amqps://user:s3cret@broker.example", "amqp://user:s3cret@127.0.0.1",
		"amqp://user:s3cret@localhost", "amqp://[::1]:5672", "amqp://anon.example"}}
	got := b.PlaintextCredentials()
	if len(got) != 1 || got[0] != "amqp://user:xxxxx@broker.example:5672" {
		t.Fatalf("plaintext credentials %q", got)
	}
	b.Username = "svc" // a configured user makes every remote amqp:// URL plain
	if got := b.PlaintextCredentials(); len(got) != 2 || got[1] != "amqp://anon.example" {
		t.Fatalf("with a configured user: %q", got)
	}
	b.SASL = SASLExternal
	if got := b.PlaintextCredentials(); len(got) != 0 {
		t.Fatalf("SASL external sends no password: %q", got)
	}
	b.SASL, b.RequireTLS = "", true
	err := b.Validate()
	if err == nil || !strings.Contains(err.Error(), `URL "amqp://user:xxxxx@broker.example:5672": require_tls is set: use amqps://`) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("require_tls: %v", err)
	}
	b.URLs = []string{"amqps://user:s3cret@broker.example"}
	if err := b.Validate(); err != nil {
		t.Fatalf("require_tls with amqps only: %v", err)
	}
}
