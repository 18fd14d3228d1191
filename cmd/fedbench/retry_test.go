package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
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

// attempts is a run that returns its errors in turn, then a sample.
func attempts(errs ...error) (func() (*sample, error), *int) {
	n := 0
	return func() (*sample, error) {
		n++
		if n <= len(errs) && errs[n-1] != nil {
			return nil, errs[n-1]
		}
		return &sample{Rate: 1000, Verified: "ok"}, nil
	}, &n
}

func TestRunWithRetryRecordsWhatHappened(t *testing.T) {
	internal := errors.New("setup: rabbit1: 500 internal error")
	for _, tc := range []struct {
		name                         string
		errs                         []error
		calls, runs, retried, failed int
	}{
		{"first time", nil, 1, 1, 0, 0},
		{"once", []error{internal}, 2, 1, 1, 0},
		{"twice", []error{internal, internal}, 2, 0, 1, 1},
		{"not retried", []error{notRetried(errNoQdrouterd)}, 1, 0, 0, 1},
	} {
		res := &result{caseSpec: caseSpec{Pair: "R", Variant: vEngine, Routes: 1, Messages: 10}}
		run, calls := attempts(tc.errs...)
		if err := runWithRetry(context.Background(), res, 2, 3, time.Now(), run); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if *calls != tc.calls || len(res.Runs) != tc.runs || len(res.Retried) != tc.retried || len(res.Errors) != tc.failed {
			t.Errorf("%s: %d calls, %d runs, retried %q, errors %q; want %d, %d, %d, %d", tc.name, *calls, len(res.Runs), res.Retried, res.Errors,
				tc.calls, tc.runs, tc.retried, tc.failed)
		}
		if tc.retried > 0 && res.Retried[0] != "round 2: "+internal.Error() {
			t.Errorf("%s: retried %q", tc.name, res.Retried)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := &result{}
	run, _ := attempts(context.Canceled)
	if err := runWithRetry(ctx, res, 1, 1, time.Now(), run); !errors.Is(err, context.Canceled) || len(res.Errors)+len(res.Retried) != 0 {
		t.Fatalf("stopped bench: %v, %+v", err, res)
	}
}
