package amqp

import (
	goamqp "github.com/Azure/go-amqp"
)

// Message is a message as the control plane's go-amqp links handle it
// (routes forward bytes on the engine, amqp/engine): received, annotated
// and sent. It wraps go-amqp's message, which stays inside this package.
// The zero Message holds nothing; its getters return zero values.
type Message struct {
	m *goamqp.Message
}

// NewMessage is a message whose body is one data section.
func NewMessage(data []byte) Message { return Message{m: goamqp.NewMessage(data)} }

// IsZero says whether m holds no message.
func (m Message) IsZero() bool { return m.m == nil }

// empty stands for the zero Message in the getters: an empty message
// has no annotation, property or body.
var empty goamqp.Message

func (m Message) get() *goamqp.Message {
	if m.m == nil {
		return &empty
	}
	return m.m
}

// Annotation returns the message annotation under key (nil when absent).
func (m Message) Annotation(key string) any { return m.get().Annotations[key] }

// AnnotationString returns the message annotation under key when it is a
// string, else "".
func (m Message) AnnotationString(key string) string {
	s, _ := m.Annotation(key).(string)
	return s
}

// SetAnnotation sets the message annotation key to v.
func (m Message) SetAnnotation(key string, v any) {
	if m.m.Annotations == nil {
		m.m.Annotations = goamqp.Annotations{}
	}
	m.m.Annotations[key] = v
}

// DeleteAnnotation removes the message annotation key.
func (m Message) DeleteAnnotation(key string) {
	if m.m != nil {
		delete(m.m.Annotations, key)
	}
}

// Property returns the application property under key (nil when absent).
func (m Message) Property(key string) any { return m.get().ApplicationProperties[key] }

// PropertyString returns the application property under key when it is a
// string, else "".
func (m Message) PropertyString(key string) string {
	s, _ := m.Property(key).(string)
	return s
}

// Data returns the first data section of the body (nil for another body).
func (m Message) Data() []byte { return m.get().GetData() }

// SetSubject sets the properties' subject.
func (m Message) SetSubject(s string) {
	if m.m.Properties == nil {
		m.m.Properties = &goamqp.MessageProperties{}
	}
	m.m.Properties.Subject = &s
}

// withSubject is m with subject s, m itself untouched: the caller may
// send m again elsewhere (another route's sender, the dead-letter queue).
func (m Message) withSubject(s string) Message {
	out := *m.get()
	p := goamqp.MessageProperties{}
	if out.Properties != nil {
		p = *out.Properties
	}
	p.Subject = &s
	out.Properties = &p
	return Message{m: &out}
}

// WrapMessage wraps a go-amqp message, for programs that use go-amqp
// directly as an AMQP application (tests, fedbench, fedchaos) and hand
// messages to the router's layers; those layers never do.
func WrapMessage(msg *goamqp.Message) Message { return Message{m: msg} }

// GoAMQP is the go-amqp message m wraps, for the same programs.
func (m Message) GoAMQP() *goamqp.Message { return m.m }
