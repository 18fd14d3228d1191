package amqp

import (
	goamqp "github.com/Azure/go-amqp"
)

// ForwardCopy returns the message to send onward for a received msg.
//
// Kept: header, message annotations, properties, application properties,
// body (data, value or sequence sections) and footer. Dropped: delivery
// annotations — they are per hop by definition, and RabbitMQ 3.10 kills the
// connection on a message carrying them. Maps are copied so the router can
// add annotations without touching the received message.
func ForwardCopy(msg *goamqp.Message) *goamqp.Message {
	out := &goamqp.Message{
		Format:                msg.Format,
		Header:                msg.Header,
		Properties:            msg.Properties,
		Annotations:           copyAnnotations(msg.Annotations),
		ApplicationProperties: copyMap(msg.ApplicationProperties),
		Data:                  msg.Data,
		Value:                 msg.Value,
		Sequence:              msg.Sequence,
		Footer:                copyAnnotations(msg.Footer),
	}
	if msg.Header != nil {
		h := *msg.Header
		out.Header = &h
	}
	if msg.Properties != nil {
		p := *msg.Properties
		out.Properties = &p
	}
	return out
}

func copyAnnotations(a goamqp.Annotations) goamqp.Annotations {
	if a == nil {
		return nil
	}
	out := make(goamqp.Annotations, len(a))
	for k, v := range a {
		out[k] = v
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
