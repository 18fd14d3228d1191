package amqp

import (
	"testing"

	goamqp "github.com/Azure/go-amqp"
)

func TestOutcomeOf(t *testing.T) {
	cases := []struct {
		st   goamqp.DeliveryState
		want Outcome
	}{
		{&goamqp.StateAccepted{}, Outcome{Kind: Accepted}},
		{&goamqp.StateReleased{}, Outcome{Kind: Released}},
		{&goamqp.StateModified{DeliveryFailed: true}, Outcome{Kind: Modified}},
		{&goamqp.StateRejected{}, Outcome{Kind: Rejected}},
		{&goamqp.StateRejected{Error: &goamqp.Error{Condition: "fed:no-path", Description: "no path"}}, Refused("fed:no-path", "no path")},
		{nil, Outcome{Kind: NoState}},
	}
	for _, c := range cases {
		if got := outcomeOf(c.st); got != c.want {
			t.Errorf("%T: %+v, want %+v", c.st, got, c.want)
		}
	}
	if r := Refused("c", "d").Reason(); r != "c: d" {
		t.Errorf("reason %q", r)
	}
	if Accepted.String() != "accepted" || OutcomeKind(9).String() != "OutcomeKind(9)" {
		t.Error("OutcomeKind names")
	}
}
