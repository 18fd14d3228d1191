package amqp

import (
	"context"
	"net/http"
	"regexp"
	"strings"
)

// QueueLimiter is a profile that can bound one queue's depth on its
// broker: a global destination's share of its limits (globaldest/shares.go,
// router/globaldest_limits.go). The rabbitmq profile is one, through a
// policy set with the management API.
type QueueLimiter interface {
	// SetQueueLimit bounds queue's depth at its broker (idempotent).
	SetQueueLimit(ctx context.Context, queue string, l QueueLimit) error
	// ClearQueueLimit removes queue's bound; a missing one is not an error.
	ClearQueueLimit(ctx context.Context, queue string) error
	// QueueLimits lists the queues this router's bounds name (to remove
	// those left by an earlier configuration).
	QueueLimits(ctx context.Context) ([]string, error)
}

// QueueLimit is one queue's bound; 0: none.
type QueueLimit struct {
	MaxLength, MaxLengthBytes int64
	Overflow                  string // reject-publish or drop-head
}

// LimitPolicyPrefix starts the names of the policies that carry the
// global destinations' shares: "fedrouter-limit-" and the queue's name.
const LimitPolicyPrefix = "fedrouter-limit-"

// LimitPolicyPriority is above any policy the routers set elsewhere
// (none, today) and above RabbitMQ's default 0: of the policies matching
// a queue RabbitMQ applies only the one with the highest priority, so an
// operator's own policy on a limited destination's queue at a lower
// priority no longer applies (docs/destinations.md says so).
const LimitPolicyPriority = 100

// SetQueueLimit puts the policy fedrouter-limit-<queue>: a pattern that
// matches queue alone, applied to queues. A queue's own x-max-length
// still holds (RabbitMQ applies the smaller of the two); its own
// x-overflow wins over the policy's (config refuses a difference).
func (p *rabbitProfile) SetQueueLimit(ctx context.Context, queue string, l QueueLimit) error {
	def := map[string]any{}
	if l.MaxLength > 0 {
		def["max-length"] = l.MaxLength
	}
	if l.MaxLengthBytes > 0 {
		def["max-length-bytes"] = l.MaxLengthBytes
	}
	if l.Overflow != "" {
		def["overflow"] = l.Overflow
	}
	body := map[string]any{"pattern": "^" + regexp.QuoteMeta(queue) + "$", "apply-to": "queues", "priority": LimitPolicyPriority, "definition": def}
	return p.mgmt.do(ctx, http.MethodPut, p.mgmt.object("policies", LimitPolicyPrefix+queue), body, nil)
}

// ClearQueueLimit deletes the policy of queue.
func (p *rabbitProfile) ClearQueueLimit(ctx context.Context, queue string) error {
	return ignoreNotFound(p.mgmt.do(ctx, http.MethodDelete, p.mgmt.object("policies", LimitPolicyPrefix+queue), nil, nil))
}

// QueueLimits lists the queues the vhost's fedrouter-limit- policies name.
func (p *rabbitProfile) QueueLimits(ctx context.Context) ([]string, error) {
	names, err := p.mgmt.names(ctx, "/api/policies/"+p.mgmt.vh())
	var out []string
	for _, n := range names {
		if q, ok := strings.CutPrefix(n, LimitPolicyPrefix); ok {
			out = append(out, q)
		}
	}
	return out, err
}

var _ QueueLimiter = (*rabbitProfile)(nil)

// limitSupport is what each profile enforces of a global destination's
// limits (config refuses the rest; `fedrouter profiles` says it).
var limitSupport = map[string]map[string]bool{
	"rabbitmq": {"max_messages": true, "max_bytes": true},
}

// EnforcesLimit says whether profile enforces limit (max_messages,
// max_bytes, max_producers).
func EnforcesLimit(profile, limit string) bool { return limitSupport[profile][limit] }

// LimitSupport says what profile enforces of a global destination's limits.
func LimitSupport(profile string) string {
	if profile == "rabbitmq" {
		return "max_messages, max_bytes (a policy per broker: its share); max_producers: not enforceable with this profile (RabbitMQ has no per-queue producer limit)"
	}
	return "none: not enforceable with this profile (it holds no global destinations)"
}
