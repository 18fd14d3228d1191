package amqp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	goamqp "github.com/Azure/go-amqp"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want Scope
	}{
		{"nil", nil, ScopeNone},
		{"link detach", &goamqp.LinkError{RemoteErr: &goamqp.Error{Condition: goamqp.ErrCondDetachForced}}, ScopeLink},
		{"link closed locally", &goamqp.LinkError{}, ScopeLink},
		{"session ended", &goamqp.SessionError{}, ScopeSession},
		{"conn error", &goamqp.ConnError{}, ScopeConn},
		{"refused attach", &goamqp.Error{Condition: goamqp.ErrCondNotFound}, ScopeSession},
		{"internal error", &goamqp.Error{Condition: goamqp.ErrCondInternalError}, ScopeConn},
		{"internal error inside link error", &goamqp.LinkError{RemoteErr: &goamqp.Error{Condition: goamqp.ErrCondInternalError}}, ScopeConn},
		{"sasl", errors.New("SASL PLAIN auth failed with code 0x1"), ScopeAuth},
		{"deadline", fmt.Errorf("send: %w", context.DeadlineExceeded), ScopeTimeout},
		{"wrapped conn", fmt.Errorf("x: %w", &goamqp.ConnError{}), ScopeConn},
		{"own error keeps its scope", &Error{Op: "x", Scope: ScopeLink, Err: io.EOF}, ScopeLink},
		{"closed", ErrClosed, ScopeConn},
		{"unknown", io.ErrUnexpectedEOF, ScopeConn},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("%s: Classify(%v) = %s, want %s", c.name, c.err, got, c.want)
		}
	}
}

func TestErrorWrapsCause(t *testing.T) {
	cause := &goamqp.Error{Condition: goamqp.ErrCondNotFound, Description: "no queue"}
	err := wrap("attach receiver /amq/queue/x", "paris", cause)
	var e *Error
	if !errors.As(err, &e) || e.Scope != ScopeSession || e.Broker != "paris" {
		t.Fatalf("wrap gave %#v", err)
	}
	var ae *goamqp.Error
	if !errors.As(err, &ae) || ae != cause {
		t.Fatal("the go-amqp cause is not reachable through Unwrap")
	}
	if got := Condition(err); got != string(goamqp.ErrCondNotFound) {
		t.Fatalf("Condition = %q", got)
	}
	if want := "amqp: broker paris: attach receiver /amq/queue/x: *Error{Condition: amqp:not-found, Description: no queue, Info: map[]}"; err.Error() != want {
		t.Fatalf("message = %q\nwant      %q", err.Error(), want)
	}
}
