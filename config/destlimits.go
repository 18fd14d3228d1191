package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/globaldest"
)

// DestinationLimits are a destinations: entry's limits over the sum of
// its instances (docs/destinations.md, "Limits"); each broker enforces
// its share of them.
type DestinationLimits struct {
	MaxMessages  Count  `yaml:"max_messages"`
	MaxBytes     Count  `yaml:"max_bytes"`
	MaxProducers Count  `yaml:"max_producers"`
	Overflow     string `yaml:"overflow"` // reject-publish (default) or drop-head
}

// Count is a whole number as written: kept raw until validation, so a
// value that is not one is reported with its field's name.
type Count struct {
	Raw string
	Set bool
}

// UnmarshalYAML keeps the scalar as written. Its refusal is a
// *yaml.TypeError, so decoding goes on (Duration's).
func (c *Count) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a whole number, not a %s", n.Line, map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list"}[n.Kind])}}
	}
	c.Raw, c.Set = n.Value, true
	return nil
}

// value is the count, or a problem naming field.
func (c Count) value(field string) (int64, string) {
	if !c.Set {
		return 0, ""
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(c.Raw, "_", ""), 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Sprintf("%s: %q is not a whole number", field, c.Raw)
	case v < 1:
		return 0, fmt.Sprintf("%s: %d: want 1 or more (no limit: leave it out)", field, v)
	}
	return v, ""
}

// maxLimit keeps the shares' arithmetic and RabbitMQ's policies in range.
const maxLimit = 1 << 53

// limits checks d's limits over a span of n brokers whose profiles are
// profiles: the limits for the core, and the problems, each "field: what"
// (": what" for the limits as a whole).
func (d DestinationSpec) limits(n int, profiles []string) (*globaldest.Limits, []string) {
	l := d.Limits
	if l == nil {
		return nil, nil
	}
	var problems []string
	out := globaldest.Limits{Overflow: l.Overflow}
	for _, f := range []struct {
		name string
		c    Count
		dst  *int64
	}{{"max_messages", l.MaxMessages, &out.MaxMessages}, {"max_bytes", l.MaxBytes, &out.MaxBytes}, {"max_producers", l.MaxProducers, &out.MaxProducers}} {
		v, problem := f.c.value(f.name)
		if problem != "" {
			problems = append(problems, problem)
			continue
		}
		switch {
		case !f.c.Set:
			continue
		case v > maxLimit:
			problems = append(problems, fmt.Sprintf("%s: %d: at most 2^53", f.name, v))
		case f.name != "max_producers" && v < int64(n):
			problems = append(problems, fmt.Sprintf("%s: %d is less than the %d brokers of the span: each broker's share is at least 1", f.name, v, n))
		}
		for _, p := range profiles {
			if !amqp.EnforcesLimit(p, f.name) {
				problems = append(problems, fmt.Sprintf("%s: not enforceable with profile %s (%s)", f.name, p, notEnforceable(p, f.name)))
				break
			}
		}
		*f.dst = v
	}
	switch out.Overflow {
	case "":
		out.Overflow = globaldest.RejectPublish
	case globaldest.RejectPublish, globaldest.DropHead:
	default:
		problems = append(problems, fmt.Sprintf("overflow: %q: want reject-publish or drop-head", out.Overflow))
	}
	if !l.MaxMessages.Set && !l.MaxBytes.Set && !l.MaxProducers.Set {
		problems = append(problems, ": none set: want max_messages, max_bytes or max_producers")
	}
	if ov, ok := d.Arguments["x-overflow"]; ok && ov != out.Overflow {
		// RabbitMQ lets a queue's own x-overflow win over a policy's.
		problems = append(problems, fmt.Sprintf("overflow: %s, but arguments set x-overflow %v (a queue's own argument wins over the limit's)", out.Overflow, ov))
	}
	if qt, ok := d.Arguments["x-queue-type"]; ok && qt == "stream" {
		problems = append(problems, ": a stream (x-queue-type) has no max-length: limits need classic or quorum queues")
	}
	return &out, problems
}

// notEnforceable says why profile cannot enforce limit.
func notEnforceable(profile, limit string) string {
	switch {
	case profile == "rabbitmq" && limit == "max_producers":
		return "RabbitMQ has no per-queue producer limit"
	case profile == "rabbitmq":
		return "not supported"
	}
	return "global destinations need the rabbitmq profile"
}
