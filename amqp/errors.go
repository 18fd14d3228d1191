package amqp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Scope says how much of the AMQP object tree an error has killed, and so
// what the caller must rebuild.
type Scope int

const (
	// ScopeNone: not an AMQP failure (nil error).
	ScopeNone Scope = iota
	// ScopeLink: the link is gone; the session and connection still work.
	ScopeLink
	// ScopeSession: the session is gone (or unsafe: after a refused attach
	// RabbitMQ ends the session, and reusing it kills the connection).
	ScopeSession
	// ScopeConn: the connection is gone; every session and link on it too.
	ScopeConn
	// ScopeAuth: authentication failed; retrying will not help.
	ScopeAuth
	// ScopeTimeout: a bounded wait expired; the operation's outcome is in
	// doubt and the link it ran on must not be trusted.
	ScopeTimeout
)

func (s Scope) String() string {
	switch s {
	case ScopeNone:
		return "none"
	case ScopeLink:
		return "link"
	case ScopeSession:
		return "session"
	case ScopeConn:
		return "connection"
	case ScopeAuth:
		return "auth"
	case ScopeTimeout:
		return "timeout"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// Error is the amqp layer's error: what was being done, on which broker,
// the scope it killed, and the underlying cause.
type Error struct {
	Op     string // e.g. "dial", "attach receiver", "send"
	Broker string // broker name from the configuration
	Scope  Scope
	Err    error
}

func (e *Error) Error() string {
	if e.Broker == "" {
		return fmt.Sprintf("amqp: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("amqp: broker %s: %s: %v", e.Broker, e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Sentinel errors of this layer.
var (
	ErrClosed      = errors.New("amqp: connection closed")
	ErrAuth        = errors.New("amqp: authentication failed")
	ErrUnsupported = errors.New("amqp: not supported by this broker profile")
	ErrNotFound    = errors.New("amqp: broker object not found")
)

// wrap builds an *Error for err, classifying it; nil stays nil.
func wrap(op, broker string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Broker: broker, Scope: Classify(err), Err: err}
}

// Classify says what err has killed. The rules follow go-amqp v1.7.0:
//   - *LinkError: only the link (detach, forced or not);
//   - *SessionError: the session;
//   - *ConnError, and amqp:internal-error anywhere: the connection;
//   - a bare *goamqp.Error is what a refused attach returns: the broker has
//     ended (RabbitMQ) or may end the session, so the session goes;
//   - SASL failures: auth (go-amqp gives them untyped, "SASL PLAIN auth
//     failed" whatever the mechanism);
//   - context expiry: timeout, the operation is in doubt.
func Classify(err error) Scope {
	if err == nil {
		return ScopeNone
	}
	var own *Error
	if errors.As(err, &own) && own.Scope != ScopeNone {
		return own.Scope
	}
	if errors.Is(err, ErrAuth) || isSASLFailure(err) {
		return ScopeAuth
	}
	var amqpErr *goamqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Condition == goamqp.ErrCondInternalError {
		return ScopeConn
	}
	var connErr *goamqp.ConnError
	if errors.As(err, &connErr) || errors.Is(err, ErrClosed) {
		return ScopeConn
	}
	var sessErr *goamqp.SessionError
	if errors.As(err, &sessErr) {
		return ScopeSession
	}
	var linkErr *goamqp.LinkError
	if errors.As(err, &linkErr) {
		return ScopeLink
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ScopeTimeout
	}
	if amqpErr != nil {
		return ScopeSession
	}
	// Anything else (I/O errors while dialing, unknown failures) is treated
	// as the worst recoverable case.
	return ScopeConn
}

func isSASLFailure(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SASL") && strings.Contains(s, "auth failed")
}

// Condition returns the AMQP error condition carried by err, or "".
func Condition(err error) string {
	var amqpErr *goamqp.Error
	if errors.As(err, &amqpErr) {
		return string(amqpErr.Condition)
	}
	var linkErr *goamqp.LinkError
	if errors.As(err, &linkErr) && linkErr.RemoteErr != nil {
		return string(linkErr.RemoteErr.Condition)
	}
	var wireErr *wire.Error // the engine's errors carry the peer's as it came
	if errors.As(err, &wireErr) {
		return wireErr.Condition
	}
	return ""
}
