package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestNextStepRetriesAFailedRunOnce(t *testing.T) {
	brokerErr := errors.New("setup: management PUT queue: 500 internal error")
	for _, tc := range []struct {
		name      string
		attempt   int
		err       error
		cancelled bool
		want      step
	}{
		{"ok", 1, nil, false, stepDone},
		{"ok on the second attempt", 2, nil, false, stepDone},
		{"first failure", 1, brokerErr, false, stepRetry},
		{"second failure", 2, brokerErr, false, stepFail},
		{"not retried", 1, notRetried(errors.New("unknown variant")), false, stepFail},
		{"not retried, wrapped", 1, fmt.Errorf("case: %w", notRetried(errNoQdrouterd)), false, stepFail},
		{"bench stopped", 1, context.Canceled, true, stepAbort},
		{"bench stopped on a retry", 2, brokerErr, true, stepAbort},
	} {
		if got := nextStep(tc.attempt, tc.err, tc.cancelled); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
