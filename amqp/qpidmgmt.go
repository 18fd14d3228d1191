package amqp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goamqp "github.com/Azure/go-amqp"
)

// QpidManagement speaks QMF2 to a qpidd broker over AMQP 1.0: requests to
// the qmf.default.direct exchange, replies on a dynamic queue. It is what
// qpid-config does, without the python tools (not packaged, not shipped).
//
// Each call dials its own short connection: calls are rare (a route's
// start and removal, a destination poll) and a connection shared with the
// routes would tie a management failure to their links.
type QpidManagement struct {
	broker  string
	targets []dialTarget
}

// ErrQMF is a request qpidd answered with a QMF exception.
var ErrQMF = errors.New("amqp: qpidd management refused the request")

const (
	qmfAddress    = "qmf.default.direct"
	qmfBrokerName = "org.apache.qpid.broker:broker:amqp-broker"
	qmfTimeout    = 15 * time.Second
)

// NewQpidManagement prepares QMF calls to cfg's broker.
func NewQpidManagement(cfg BrokerConfig) (*QpidManagement, error) {
	targets, err := cfg.dialTargets("fedrouter-qmf-" + cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("qpid management for %s: %w", cfg.Name, err)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("qpid management for %s: no URL", cfg.Name)
	}
	return &QpidManagement{broker: cfg.Name, targets: targets}, nil
}

// QMFObject is one object of a QMF query: its property values.
type QMFObject map[string]any

// String returns property k as a string ("" when absent).
func (o QMFObject) String(k string) string {
	switch v := o[k].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// Bool returns property k as a bool (false when absent).
func (o QMFObject) Bool(k string) bool {
	b, _ := o[k].(bool)
	return b
}

// RefName returns the object name a reference property points to, without
// its package and class ("amq.topic" for
// org.apache.qpid.broker:exchange:amq.topic).
func (o QMFObject) RefName(k string) string {
	ref, _ := o[k].(map[string]any)
	if ref == nil {
		return ""
	}
	var name string
	switch v := ref["_object_name"].(type) {
	case string:
		name = v
	case []byte:
		name = string(v)
	}
	parts := strings.SplitN(name, ":", 3)
	return parts[len(parts)-1]
}

// Create creates a broker object (type queue, exchange, binding…) with
// properties props. An object that already exists is not an error.
func (m *QpidManagement) Create(ctx context.Context, typ, name string, props map[string]any) error {
	err := m.method(ctx, "create", map[string]any{"type": typ, "name": name, "properties": props, "strict": true})
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "already exists") {
		return nil
	}
	if err != nil {
		return &Error{Op: fmt.Sprintf("qmf create %s %s", typ, name), Broker: m.broker, Err: err}
	}
	return nil
}

// Delete deletes a broker object; one that is not there is not an error.
func (m *QpidManagement) Delete(ctx context.Context, typ, name string) error {
	err := m.method(ctx, "delete", map[string]any{"type": typ, "name": name, "options": map[string]any{}})
	if err != nil && strings.Contains(err.Error(), "not-found") { // "not-found: Delete failed. No such queue"
		return nil
	}
	if err != nil {
		return &Error{Op: fmt.Sprintf("qmf delete %s %s", typ, name), Broker: m.broker, Err: err}
	}
	return nil
}

// Objects lists the objects of a QMF class (queue, exchange, binding).
func (m *QpidManagement) Objects(ctx context.Context, class string) ([]QMFObject, error) {
	return m.query(ctx, class, map[string]any{"_what": "OBJECT", "_schema_id": map[string]any{"_class_name": class}})
}

func (m *QpidManagement) query(ctx context.Context, class string, q map[string]any) ([]QMFObject, error) {
	var out []QMFObject
	err := m.call(ctx, "_query_request", q,
		func(resp *goamqp.Message) error {
			list, ok := resp.Value.([]any)
			if !ok {
				return fmt.Errorf("query %s: reply body %T, want a list", class, resp.Value)
			}
			for _, it := range list {
				obj, _ := it.(map[string]any)
				vals, _ := obj["_values"].(map[string]any)
				if vals != nil {
					out = append(out, QMFObject(vals))
				}
			}
			return nil
		})
	if err != nil {
		return nil, &Error{Op: "qmf query " + class, Broker: m.broker, Err: err}
	}
	return out, nil
}

// Queue returns the queue called name, or ErrNotFound.
func (m *QpidManagement) Queue(ctx context.Context, name string) (QMFObject, error) {
	return m.object(ctx, "queue", name)
}

// Exchange returns the exchange called name, or ErrNotFound.
func (m *QpidManagement) Exchange(ctx context.Context, name string) (QMFObject, error) {
	return m.object(ctx, "exchange", name)
}

// object asks for one object by its QMF name (not the whole class: a
// broker may hold many queues).
func (m *QpidManagement) object(ctx context.Context, class, name string) (QMFObject, error) {
	objs, err := m.query(ctx, class, map[string]any{"_what": "OBJECT",
		"_object_id": map[string]any{"_object_name": "org.apache.qpid.broker:" + class + ":" + name}})
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.String("name") == name {
			return o, nil
		}
	}
	return nil, fmt.Errorf("qpidd %s: %s %s: %w", m.broker, class, name, ErrNotFound)
}

func (m *QpidManagement) method(ctx context.Context, name string, args map[string]any) error {
	body := map[string]any{
		"_object_id":   map[string]any{"_object_name": qmfBrokerName},
		"_method_name": name,
		"_arguments":   args,
	}
	return m.call(ctx, "_method_request", body, func(*goamqp.Message) error { return nil })
}

// call sends one QMF request and hands every reply part to each until the
// last (a query answer may come in several, flagged "partial").
func (m *QpidManagement) call(ctx context.Context, opcode string, body map[string]any, each func(*goamqp.Message) error) error {
	ctx, cancel := context.WithTimeout(ctx, qmfTimeout)
	defer cancel()
	conn, err := m.dial(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }() // the answer is in; a close error changes nothing
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	// Ended before the connection closes, which would otherwise take the
	// reply receiver with it: what can crash qpidd (sessionend.go).
	defer endSessions([]*goamqp.Session{sess})
	rcv, err := sess.NewReceiver(ctx, "", &goamqp.ReceiverOptions{DynamicAddress: true, Credit: 10})
	if err != nil {
		return fmt.Errorf("attach reply queue: %w", err)
	}
	snd, err := sess.NewSender(ctx, qmfAddress, nil)
	if err != nil {
		return fmt.Errorf("attach %s: %w", qmfAddress, err)
	}
	reply, subject, cid := rcv.Address(), "broker", "fedrouter-qmf"
	req := &goamqp.Message{
		Properties: &goamqp.MessageProperties{Subject: &subject, ReplyTo: &reply, CorrelationID: cid},
		ApplicationProperties: map[string]any{
			"x-amqp-0-10.app-id": "qmf2", "qmf.opcode": opcode, "method": "request",
		},
		Value: body,
	}
	if err := snd.Send(ctx, req, nil); err != nil {
		return fmt.Errorf("send %s: %w", opcode, err)
	}
	return receiveQMF(ctx, rcv, each)
}

// dial connects to the broker's first URL that answers, as the routes'
// connection does (the key guard too: the replies come from a queue).
func (m *QpidManagement) dial(ctx context.Context) (*goamqp.Conn, error) {
	var errs []error
	for _, t := range m.targets {
		conn, err := dialNet(ctx, t, -1)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, fmt.Errorf("dial %s: %w", t.redacted, err))
	}
	return nil, errors.Join(errs...)
}

func receiveQMF(ctx context.Context, rcv *goamqp.Receiver, each func(*goamqp.Message) error) error {
	for {
		resp, err := rcv.Receive(ctx, nil)
		if err != nil {
			return fmt.Errorf("wait for the answer: %w", err)
		}
		_ = rcv.AcceptMessage(ctx, resp) // a reply queue of our own, gone with the connection
		if op, _ := resp.ApplicationProperties["qmf.opcode"].(string); op == "_exception" {
			return fmt.Errorf("%w: %s", ErrQMF, qmfErrorText(resp.Value))
		}
		if err := each(resp); err != nil {
			return err
		}
		if _, partial := resp.ApplicationProperties["partial"]; !partial {
			return nil
		}
	}
}

func qmfErrorText(v any) string {
	body, _ := v.(map[string]any)
	vals, _ := body["_values"].(map[string]any)
	switch t := vals["error_text"].(type) {
	case string:
		return t
	case []byte:
		return string(t)
	}
	return fmt.Sprint(v)
}
