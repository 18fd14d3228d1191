package amqp

import (
	"context"
	"errors"
	"strconv"

	goamqp "github.com/Azure/go-amqp"
)

// OutcomeKind is what a destination decided about a message.
type OutcomeKind int

const (
	// NoState: settled without an outcome (treated as released).
	NoState OutcomeKind = iota
	// Accepted: the destination took it.
	Accepted
	// Rejected: the destination refused it, with a condition.
	Rejected
	// Released: not taken; the source may deliver it again.
	Released
	// Modified: not taken, with changed delivery annotations; as released.
	Modified
)

var outcomeNames = [...]string{"no state", "accepted", "rejected", "released", "modified"}

func (k OutcomeKind) String() string {
	if k >= 0 && int(k) < len(outcomeNames) {
		return outcomeNames[k]
	}
	return "OutcomeKind(" + strconv.Itoa(int(k)) + ")"
}

// Outcome is a destination's decision about one message.
type Outcome struct {
	Kind OutcomeKind
	// Condition and Description say why a Rejected message was refused.
	Condition, Description string
	// Local: the router decided it itself (a route without a path, a
	// refused transit message), not the destination; its condition and
	// description are what the source should see.
	Local bool
}

// Refused is the Rejected outcome with condition and description.
func Refused(condition, description string) Outcome {
	return Outcome{Kind: Rejected, Condition: condition, Description: description}
}

// Reason is the rejection as one line: "condition: description".
func (o Outcome) Reason() string {
	switch {
	case o.Condition == "":
		return o.Description
	case o.Description == "":
		return o.Condition
	}
	return o.Condition + ": " + o.Description
}

func outcomeOf(st goamqp.DeliveryState) Outcome {
	switch s := st.(type) {
	case *goamqp.StateAccepted:
		return Outcome{Kind: Accepted}
	case *goamqp.StateRejected:
		o := Outcome{Kind: Rejected}
		if s.Error != nil {
			o.Condition, o.Description = string(s.Error.Condition), s.Error.Description
		}
		return o
	case *goamqp.StateReleased:
		return Outcome{Kind: Released}
	case *goamqp.StateModified:
		return Outcome{Kind: Modified}
	}
	return Outcome{Kind: NoState}
}

// Receipt is the pending outcome of one message sent unsettled.
type Receipt struct {
	r goamqp.SendReceipt
}

// Wait waits for the destination's outcome.
func (r *Receipt) Wait(ctx context.Context) (Outcome, error) {
	st, err := r.r.Wait(ctx)
	if err != nil {
		return Outcome{}, err
	}
	return outcomeOf(st), nil
}

// Refusal says whether err is a broker refusing what the route asked for
// as configured — the node is not there, or not allowed — rather than a
// passing failure.
func Refusal(err error) bool {
	if errors.Is(err, ErrNotFound) {
		return true
	}
	switch Condition(err) {
	case string(goamqp.ErrCondNotFound), string(goamqp.ErrCondUnauthorizedAccess), string(goamqp.ErrCondNotAllowed):
		return true
	}
	return false
}
