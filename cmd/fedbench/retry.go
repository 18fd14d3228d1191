package main

import (
	"errors"
	"fmt"
)

// A run fails now and then for reasons outside what it measures: seen, a
// RabbitMQ internal error in one of 84 runs, which failed the whole
// bench. A failed run is therefore run again once, on new objects, and
// the first failure is reported (in the table and the JSON as retried);
// a second failure fails the case, and the bench goes on and exits
// non-zero at the end. What no second attempt can change — a missing
// binary, an unknown variant — is not retried. A run that completes but
// whose check after the fact finds a message lost or left behind is not
// retried either: that is what the bench is there to catch.

// errNotRetried marks a run's error that a second attempt cannot change.
var errNotRetried = errors.New("fedbench: not retried")

// notRetried wraps err so that nextStep does not retry it.
func notRetried(err error) error { return fmt.Errorf("%w: %w", errNotRetried, err) }

// step is what follows one attempt of a run.
type step int

const (
	stepDone  step = iota // it succeeded: record its sample
	stepRetry             // run it again, once
	stepFail              // record the failure and go on with the next case
	stepAbort             // the bench is being stopped
)

// nextStep decides what follows attempt (1, 2, ...) of a run that ended
// with err; cancelled says whether the bench's context is done.
func nextStep(attempt int, err error, cancelled bool) step {
	switch {
	case err == nil:
		return stepDone
	case cancelled:
		return stepAbort
	case attempt == 1 && !errors.Is(err, errNotRetried):
		return stepRetry
	}
	return stepFail
}
