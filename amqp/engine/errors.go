package engine

import (
	"errors"
	"fmt"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Sentinels of the engine.
var (
	// ErrClosed: the connection, session or link was closed locally.
	ErrClosed = errors.New("engine: closed")
	// ErrAuth: SASL authentication failed; retrying will not help.
	ErrAuth = errors.New("engine: authentication failed")
	// ErrNoCredit: a non-blocking send found no link credit or session
	// window.
	ErrNoCredit = errors.New("engine: no credit")
	// ErrTooLarge: a message over the peer's or our max-message-size.
	ErrTooLarge = errors.New("engine: message too large")
	// ErrIdleTimeout: the peer sent nothing within twice our idle-timeout.
	ErrIdleTimeout = errors.New("engine: peer idle for more than twice the idle-timeout")
	// ErrUnwritable: a message a sender cannot write as its link asks
	// (SenderOptions.Subject on properties that do not decode); it also
	// wraps the wire.ErrDecode naming why. Nothing was sent; the link
	// goes on.
	ErrUnwritable = errors.New("engine: the message cannot be written as the link asks")
	// ErrProtocol: the peer broke a rule of the protocol or one of our
	// limits; the error says which.
	ErrProtocol = errors.New("engine: protocol violation")
)

// ConnError is why a connection ended: Remote is the error the peer
// closed it with (nil if none), Err the local cause.
type ConnError struct {
	Remote *wire.Error
	Err    error
}

func (e *ConnError) Error() string {
	switch {
	case e.Remote != nil:
		return fmt.Sprintf("engine: connection closed by the peer: %v", e.Remote)
	case e.Err != nil:
		return fmt.Sprintf("engine: connection: %v", e.Err)
	}
	return "engine: connection closed by the peer"
}

func (e *ConnError) Unwrap() []error {
	return causes(e.Remote, e.Err)
}

// causes is what an error of ours wraps: the peer's error and the local
// cause, either of which may be absent.
func causes(remote *wire.Error, err error) []error {
	var out []error
	if remote != nil {
		out = append(out, remote)
	}
	if err != nil {
		out = append(out, err)
	}
	return out
}

// SessionError is why a session ended.
type SessionError struct {
	Remote *wire.Error
	Err    error
}

func (e *SessionError) Error() string {
	if e.Remote != nil {
		return fmt.Sprintf("engine: session ended by the peer: %v", e.Remote)
	}
	return fmt.Sprintf("engine: session: %v", e.Err)
}

func (e *SessionError) Unwrap() []error {
	return causes(e.Remote, e.Err)
}

// LinkError is why a link ended (or was refused): the link's name and
// address, the peer's error if it sent one.
type LinkError struct {
	Name    string
	Address string
	Remote  *wire.Error
	Err     error
}

func (e *LinkError) Error() string {
	if e.Remote != nil {
		return fmt.Sprintf("engine: link %q (%s) detached by the peer: %v", e.Name, e.Address, e.Remote)
	}
	return fmt.Sprintf("engine: link %q (%s): %v", e.Name, e.Address, e.Err)
}

func (e *LinkError) Unwrap() []error {
	return causes(e.Remote, e.Err)
}

// violation is a protocol error naming the rule, sent to the peer as the
// condition of our close.
type violation struct {
	cond  string
	msg   string
	cause error // ErrProtocol when nil
}

func (v *violation) Error() string { return v.msg }
func (v *violation) Unwrap() error {
	if v.cause != nil {
		return v.cause
	}
	return ErrProtocol
}

func violate(cond, format string, args ...any) error {
	return &violation{cond: cond, msg: fmt.Sprintf(format, args...)}
}

// Conditions used in our own closes and detaches (part 2.8.15-2.8.18).
const (
	condFramingError    = "amqp:connection:framing-error"
	condInvalidField    = "amqp:invalid-field"
	condNotAllowed      = "amqp:not-allowed"
	condNotImplemented  = "amqp:not-implemented"
	condWindowViolation = "amqp:session:window-violation"
	condUnattached      = "amqp:session:unattached-handle"
	condTransferLimit   = "amqp:link:transfer-limit-exceeded"
	condMessageSize     = "amqp:link:message-size-exceeded"
	condDecodeError     = "amqp:decode-error"
	condResourceLimit   = "amqp:resource-limit-exceeded"
)
