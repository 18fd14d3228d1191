package config

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/globaldest"
	"github.com/fedrouter/fedrouter/links"
)

// DestinationSpec is one `destinations:` entry: global destinations
// (docs/destinations.md). The queues it names exist at every broker of its
// span with the same properties, created and deleted there by the routers.
type DestinationSpec struct {
	// Name is a queue name, or a glob ('*', '?') naming several.
	Name string `yaml:"name"`
	// Brokers is the span; default: every broker of this router whose
	// profile can list and create queues (rabbitmq).
	Brokers []string `yaml:"brokers"`
	// The properties. None set: each destination takes those of its
	// first instance seen, and a change made at one broker propagates.
	// Any set: they are the destination's (durable then defaults to true),
	// and an instance that differs is a conflict.
	Durable        *bool          `yaml:"durable"`
	MaxLength      *int64         `yaml:"max_length"`
	MaxLengthBytes *int64         `yaml:"max_length_bytes"`
	MessageTTL     *Duration      `yaml:"message_ttl"`
	Arguments      map[string]any `yaml:"arguments"`
	// DeleteNonEmpty: a deletion carries to instances holding messages.
	DeleteNonEmpty bool `yaml:"delete_nonempty"`
	// ConfirmDelete: how long a destination must stay gone from a broker
	// before its deletion is carried to the others (default 30s).
	ConfirmDelete Duration `yaml:"confirm_delete"`
	// Idle: auto-created destinations with no consumer and no message
	// anywhere this long are removed everywhere (default 2m).
	Idle Duration `yaml:"idle"`
	// FollowConsumers: messages at an instance with no consumer move to
	// one with consumers (default true). MaxHops: how often one message
	// may move (default 2). Settle: the hysteresis — how long an instance
	// must have had no consumer, and the target consumers, before messages
	// move (default 5s).
	FollowConsumers *bool    `yaml:"follow_consumers"`
	MaxHops         int      `yaml:"max_hops"`
	Settle          Duration `yaml:"settle"`
	// Limits hold for the sum over every instance (destlimits.go).
	Limits *DestinationLimits `yaml:"limits"`
}

// Defaults of a destinations: entry.
const (
	DefaultConfirmDelete   = 30 * time.Second
	DefaultDestinationIdle = 2 * time.Minute
	MinDestinationIdle     = 10 * time.Second
	DefaultMaxHops         = 2
	MaxMaxHops             = 100
	DefaultSettle          = 5 * time.Second
	// MinSettle is the brokers' listing period: a shorter settle time would
	// judge consumers from one listing.
	MinSettle          = 2 * time.Second
	maxDestinationName = 255 // RabbitMQ's limit on a queue name, in bytes
)

// queueArguments are the queue arguments the rabbitmq profile can set
// (RabbitMQ's documented x- arguments), with the JSON type each takes.
var queueArguments = map[string]string{
	"x-message-ttl": "int", "x-expires": "int", "x-max-length": "int", "x-max-length-bytes": "int",
	"x-overflow": "string", "x-dead-letter-exchange": "string", "x-dead-letter-routing-key": "string",
	"x-single-active-consumer": "bool", "x-max-priority": "int", "x-queue-type": "string",
	"x-queue-mode": "string", "x-queue-master-locator": "string", "x-queue-leader-locator": "string",
	"x-delivery-limit": "int", "x-quorum-initial-group-size": "int", "x-max-age": "string",
	"x-stream-max-segment-size-bytes": "int", "x-dead-letter-strategy": "string",
}

// destinationCapable says whether a broker's profile can list and create
// queues (global destinations need both).
func destinationCapable(b BrokerSpec) bool { return b.Profile == "rabbitmq" }

// validateDestinations checks the destinations: entries.
func (c *Config) validateDestinations(brokers map[string]int) []string {
	var p []string
	for i := range c.Destinations {
		d := &c.Destinations[i]
		key := fmt.Sprintf("destinations[%d]", i)
		add := func(field, format string, args ...any) {
			p = append(p, c.at(key)+": "+key+"."+field+": "+fmt.Sprintf(format, args...))
		}
		switch {
		case d.Name == "":
			add("name", `required: a queue name or a glob, e.g. "orders.*"`)
		case len(d.Name) > maxDestinationName:
			add("name", "%d bytes long, at most %d", len(d.Name), maxDestinationName)
		case ownedPattern(d.Name, c.Topology.ControlAddress):
			add("name", "%q can name the routers' own queues (%s*, %s): they are never global destinations", d.Name, links.RouterOwnedPrefix, c.Topology.ControlAddress)
		}
		for _, b := range d.Brokers {
			j, ok := brokers[b]
			switch {
			case !ok:
				add("brokers", "%q is not in brokers", b)
			case !destinationCapable(c.Brokers[j]):
				add("brokers", "%s (profile %s) cannot list or create queues: global destinations need the rabbitmq profile (fedrouter profiles)", b, c.Brokers[j].Profile)
			}
		}
		if len(d.Brokers) == 0 && len(c.destinationBrokers()) == 0 {
			add("brokers", "no broker of this router can hold global destinations (the rabbitmq profile is needed)")
		}
		if d.ConfirmDelete < 0 {
			add("confirm_delete", "%s: want a positive duration", time.Duration(d.ConfirmDelete))
		}
		if d.Idle != 0 && time.Duration(d.Idle) < MinDestinationIdle {
			// RabbitMQ's management API counts consumers every 5 s: a
			// shorter idle time could reap a queue whose consumer is not
			// counted yet.
			add("idle", "%s: at least %s (longer than the broker's statistics interval, 5s)", time.Duration(d.Idle), MinDestinationIdle)
		}
		if d.MaxHops < 0 || d.MaxHops > MaxMaxHops {
			add("max_hops", "%d: want 1 to %d (follow_consumers: false keeps messages where they are published)", d.MaxHops, MaxMaxHops)
		}
		if d.Settle != 0 && time.Duration(d.Settle) < MinSettle {
			add("settle", "%s: at least %s (the brokers are listed every %s)", time.Duration(d.Settle), MinSettle, MinSettle)
		}
		if _, err := d.props(); err != nil {
			add("arguments", "%v", err)
		}
		span, profiles := c.span(d, brokers)
		_, problems := d.limits(span, profiles)
		for _, problem := range problems {
			field, what, _ := strings.Cut(problem, ": ")
			add(strings.TrimSuffix("limits."+field, "."), "%s", what)
		}
		for j := range i {
			if c.Destinations[j].Name == d.Name {
				add("name", "%q is already the name of destinations[%d]", d.Name, j)
			}
		}
	}
	return p
}

// ownedPattern says whether a name pattern can match the routers' own
// queues: judged on its literal part, up to its first wildcard.
func ownedPattern(pat, control string) bool {
	lit := pat
	if i := strings.IndexAny(pat, "*?"); i >= 0 {
		lit = pat[:i]
	}
	prefixes := []string{links.RouterOwnedPrefix}
	if control != "" {
		prefixes = append(prefixes, control)
	}
	for _, pre := range prefixes {
		if strings.HasPrefix(lit, pre) || (len(lit) < len(pat) && strings.HasPrefix(pre, lit)) {
			return true
		}
	}
	return false
}

// span is the number of brokers in d's span and their profiles (those
// known; one per profile).
func (c *Config) span(d *DestinationSpec, brokers map[string]int) (int, []string) {
	names := d.Brokers
	if len(names) == 0 {
		names = c.destinationBrokers()
	}
	var profiles []string
	for _, b := range names {
		if j, ok := brokers[b]; ok && !slices.Contains(profiles, c.Brokers[j].Profile) {
			profiles = append(profiles, c.Brokers[j].Profile)
		}
	}
	return len(names), profiles
}

// destinationBrokers are the brokers a span defaults to.
func (c *Config) destinationBrokers() []string {
	var out []string
	for _, b := range c.Brokers {
		if destinationCapable(b) {
			out = append(out, b.Name)
		}
	}
	return out
}

// props are the entry's properties, nil when it sets none.
func (d DestinationSpec) props() (*globaldest.Props, error) {
	if d.Durable == nil && d.MaxLength == nil && d.MaxLengthBytes == nil && d.MessageTTL == nil && len(d.Arguments) == 0 {
		return nil, nil
	}
	p := globaldest.Props{Durable: d.Durable == nil || *d.Durable, Args: map[string]any{}}
	var problems []string
	names := make([]string, 0, len(d.Arguments))
	for k := range d.Arguments {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if problem := checkArgument(k, d.Arguments[k]); problem != "" {
			problems = append(problems, problem)
			continue
		}
		p.Args[k] = d.Arguments[k]
	}
	set := func(name string, v *int64, field string) {
		if v == nil {
			return
		}
		if _, dup := p.Args[name]; dup {
			problems = append(problems, fmt.Sprintf("%s given twice (%s and arguments)", name, field))
		}
		if *v < 0 {
			problems = append(problems, fmt.Sprintf("%s %d: want 0 or more", field, *v))
		}
		p.Args[name] = *v
	}
	set("x-max-length", d.MaxLength, "max_length")
	set("x-max-length-bytes", d.MaxLengthBytes, "max_length_bytes")
	if d.MessageTTL != nil {
		ms := time.Duration(*d.MessageTTL).Milliseconds()
		set("x-message-ttl", &ms, "message_ttl")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	n, err := p.Normalize()
	return &n, err
}

// checkArgument judges one queue argument: "" when the profile can set it.
func checkArgument(name string, v any) string {
	want, known := queueArguments[name]
	if !known {
		return fmt.Sprintf("%s: not a queue argument the rabbitmq profile can set (known: %s)", name, knownArguments())
	}
	ok := false
	switch x := v.(type) {
	case int:
		ok = want == "int" && x >= 0
	case int64:
		ok = want == "int" && x >= 0
	case uint64:
		ok = want == "int" && x <= math.MaxInt64
	case float64:
		ok = want == "int" && x >= 0 && x == math.Trunc(x)
	case string:
		ok = want == "string" && x != ""
	case bool:
		ok = want == "bool"
	}
	if !ok {
		return fmt.Sprintf("%s: %v is not a %s", name, v, map[string]string{"int": "non-negative integer", "string": "non-empty string", "bool": "boolean"}[want])
	}
	return ""
}

func knownArguments() string {
	names := make([]string, 0, len(queueArguments))
	for k := range queueArguments {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// GlobalDestinations returns the entries for the core, defaults filled;
// call on a validated configuration.
func (c *Config) GlobalDestinations() []globaldest.Entry {
	out := make([]globaldest.Entry, 0, len(c.Destinations))
	for _, d := range c.Destinations {
		e := globaldest.Entry{Pattern: d.Name, Brokers: d.Brokers, DeleteNonEmpty: d.DeleteNonEmpty,
			ConfirmDelete: time.Duration(d.ConfirmDelete), Idle: time.Duration(d.Idle)}
		if len(e.Brokers) == 0 {
			e.Brokers = c.destinationBrokers()
		}
		if e.ConfirmDelete == 0 {
			e.ConfirmDelete = DefaultConfirmDelete
		}
		if e.Idle == 0 {
			e.Idle = DefaultDestinationIdle
		}
		e.Follow, e.MaxHops, e.Settle = d.FollowConsumers == nil || *d.FollowConsumers, d.MaxHops, time.Duration(d.Settle)
		if e.MaxHops == 0 {
			e.MaxHops = DefaultMaxHops
		}
		if e.Settle == 0 {
			e.Settle = DefaultSettle
		}
		e.Props, _ = d.props() // validated
		e.Limits, _ = d.limits(len(e.Brokers), nil)
		out = append(out, e)
	}
	return out
}
