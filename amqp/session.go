package amqp

import (
	"context"

	goamqp "github.com/Azure/go-amqp"
)

// Session is an AMQP session on a broker connection (Conn.NewSession).
// A route's links each get sessions of their own: a refused attach ends
// the session on RabbitMQ.
type Session struct {
	s     *goamqp.Session
	owner context.Context // the connection's: CloseSession's values
	open  *openSessions   // the connection's, left when the session ends; nil for none
}

// NewSender attaches a sender for spec.
func (s *Session) NewSender(ctx context.Context, spec LinkSpec) (*Sender, error) {
	snd, err := s.s.NewSender(ctx, spec.Address, spec.SenderOptions())
	if err != nil {
		return nil, err // callers say what they attached, and where
	}
	return &Sender{s: snd, subject: spec.Subject}, nil
}

// Close ends the session and its links; prefer CloseSession, which bounds
// the wait.
func (s *Session) Close(ctx context.Context) error {
	err := s.s.Close(ctx)
	if s.open != nil {
		s.open.remove(s.s)
	}
	return err
}

// GoAMQP is the go-amqp session, for programs that use go-amqp directly
// as an AMQP application (tests, fedbench, fedchaos); the router's layers
// never do.
func (s *Session) GoAMQP() *goamqp.Session { return s.s }

// Sender sends messages unsettled and hands back their receipts.
type Sender struct {
	s       *goamqp.Sender
	subject string // LinkSpec.Subject: set on every message sent
}

// Send sends msg unsettled and returns its receipt once the transfer is
// written. With a subject from the link's spec, msg's subject is replaced
// by it (the routing key, on brokers that route by subject).
func (s *Sender) Send(ctx context.Context, msg Message) (*Receipt, error) {
	if s.subject != "" {
		msg = msg.withSubject(s.subject)
	}
	r, err := s.s.SendWithReceipt(ctx, msg.m, nil)
	if err != nil {
		return nil, err
	}
	return &Receipt{r: r}, nil
}
