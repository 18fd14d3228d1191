package amqp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// QueueManager is a profile that can list, declare and delete its
// broker's queues with their properties: what global destinations need
// (globaldest, router/globaldest.go). The rabbitmq profile is one, through
// the management API; the others cannot observe queues and are not.
type QueueManager interface {
	// ListQueues lists the vhost's queues with their arguments, message
	// and consumer counts.
	ListQueues(ctx context.Context) ([]QueueInfo, error)
	// DeclareQueue creates queue name with args; an existing queue with
	// other arguments is an error (the broker keeps it as it is).
	DeclareQueue(ctx context.Context, name string, args QueueArgs) error
	// DeleteQueue deletes queue name, only if it holds no message when
	// cond.IfEmpty and only if no consumer has it when cond.IfUnused: the
	// broker checks, so a message or a consumer that arrives meanwhile
	// keeps it (ErrQueueNotEmpty, ErrQueueInUse). A missing queue is not an
	// error.
	DeleteQueue(ctx context.Context, name string, cond DeleteCond) error
}

// DeleteCond are a delete's conditions, checked by the broker.
type DeleteCond struct{ IfEmpty, IfUnused bool }

// Errors of a conditional delete.
var (
	ErrQueueNotEmpty = errors.New("amqp: the queue holds messages: not deleted")
	ErrQueueInUse    = errors.New("amqp: the queue has consumers: not deleted")
)

// ListQueues lists the vhost's queues with their arguments.
func (p *rabbitProfile) ListQueues(ctx context.Context) ([]QueueInfo, error) {
	var out []QueueInfo
	err := p.mgmt.do(ctx, http.MethodGet, "/api/queues/"+p.mgmt.vh()+"?columns=name,durable,auto_delete,exclusive,messages,message_bytes,consumers,arguments", nil, &out)
	return out, err
}

// DeclareQueue creates queue name.
func (p *rabbitProfile) DeclareQueue(ctx context.Context, name string, args QueueArgs) error {
	return p.mgmt.DeclareQueue(ctx, name, args)
}

// DeleteQueue deletes queue name under cond.
func (p *rabbitProfile) DeleteQueue(ctx context.Context, name string, cond DeleteCond) error {
	q := url.Values{}
	if cond.IfEmpty {
		q.Set("if-empty", "true")
	}
	if cond.IfUnused {
		q.Set("if-unused", "true")
	}
	path := "/api/queues/" + p.mgmt.vh() + "/" + url.PathEscape(name)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	err := ignoreNotFound(p.mgmt.do(ctx, http.MethodDelete, path, nil, nil))
	var me *MgmtError
	if errors.As(err, &me) && me.Status == http.StatusBadRequest {
		switch {
		case strings.Contains(me.Body, "not empty"):
			return ErrQueueNotEmpty
		case strings.Contains(me.Body, "in use"):
			return ErrQueueInUse
		}
	}
	return err
}

var _ QueueManager = (*rabbitProfile)(nil)

// destinationSupport is what each profile can observe and do for global
// destinations: nothing that cannot be observed is guessed.
var destinationSupport = map[string]string{
	"rabbitmq": "yes: queues with their arguments, depth and consumers (management API); creates and deletes queues",
	"qpid":     "no: QMF could list queues, not wired yet",
	"proton":   "no: its queues are configured only, nothing to list",
	"generic":  "no: AMQP 1.0 has no way to list a broker's queues",
	"artemis":  "no: AMQP 1.0 has no way to list a broker's queues (its management API is not used)",
}

// DestinationSupport says what profile can do for global destinations.
func DestinationSupport(profile string) string {
	if s, ok := destinationSupport[profile]; ok {
		return s
	}
	return "no"
}
