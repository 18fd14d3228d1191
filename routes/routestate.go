package routes

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// runState is a route's state as route list shows it — state, since when,
// why, the last error and when it retries — and the log of its changes.
// Safe for concurrent use: the route's goroutines set it, the admin API
// reads it.
type runState struct {
	log  zerolog.Logger // with the route's fields
	name string         // the route as written (Spec.String), for log lines

	mu        sync.Mutex // guards the fields below; no I/O under it
	state     State
	since     time.Time
	lastErr   string
	lastErrAt time.Time
	retryAt   time.Time
	detail    string // why the route is in its state (what it waits for, its path)
	runDetail string // an Operational route's detail (its path), while it is Stalled
	loggedErr string // the error last logged at warn/error; "" once Operational
}

// setDetail says how an Operational route runs (its path).
func (s *runState) setDetail(detail string) {
	s.mu.Lock()
	if s.state == StateOperational {
		s.detail = detail
	}
	s.mu.Unlock()
}

// setStalled turns an attached route Stalled (on), with why, or
// Operational again; a route in another state (it is not attached) is
// left as it is. The watcher logs the change (stallwatch.go).
func (s *runState) setStalled(on bool, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case on && (s.state == StateOperational || s.state == StateStalled):
		if s.state != StateStalled {
			s.state, s.since, s.runDetail = StateStalled, time.Now(), s.detail
		}
		s.detail = why
	case !on && s.state == StateStalled:
		s.state, s.since, s.detail = StateOperational, time.Now(), s.runDetail
	}
}

// attached says whether the route's links are attached, and its state.
func (s *runState) attached() (bool, State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == StateOperational || s.state == StateStalled, s.state
}

// setWaiting sets the route Waiting, for reason.
func (s *runState) setWaiting(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateWaiting {
		s.state, s.since = StateWaiting, time.Now()
	}
	s.detail = reason
	s.retryAt = time.Time{}
}

// setState enters state st, records err (if any) and when the route
// retries (retry > 0), and logs the change.
func (s *runState) setState(st State, err error, retry time.Duration) {
	s.mu.Lock()
	changed := s.state != st
	if changed {
		s.state, s.since, s.detail = st, time.Now(), ""
	}
	if err != nil {
		s.lastErr, s.lastErrAt = err.Error(), time.Now()
	}
	s.retryAt = time.Time{}
	if retry > 0 {
		s.retryAt = time.Now().Add(retry)
	}
	// Retries that fail the same way again (a broker refusing every
	// attempt) and the Connecting steps between them are logged at debug:
	// an outage must not flood the log. Operational ends the outage.
	repeat := s.loggedErr != "" && (st == StateConnecting || (err != nil && err.Error() == s.loggedErr))
	switch {
	case st == StateOperational:
		s.loggedErr = ""
	case err != nil:
		s.loggedErr = err.Error()
	}
	s.mu.Unlock()
	if !changed && err == nil {
		return
	}
	ev := s.log.Info()
	switch {
	case repeat:
		ev = s.log.Debug()
	case st == StateFailed:
		ev = s.log.Error()
	case err != nil:
		ev = s.log.Warn()
	}
	if err != nil {
		ev = ev.AnErr("error", err).Dur("retry_in", retry)
	}
	ev.Str("state", string(st)).Msg("route " + s.name)
}

// setStateWhy is setState, with why (if not "") as what the route
// waits for in st.
func (s *runState) setStateWhy(st State, err error, retry time.Duration, why string) {
	s.setState(st, err, retry)
	if why == "" {
		return
	}
	s.mu.Lock()
	if s.state == st {
		s.detail = why
	}
	s.mu.Unlock()
}

// fill copies the state into st.
func (s *runState) fill(st *Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.State, st.Since, st.Detail, st.LastError, st.LastErrorAt = s.state, s.since, s.detail, s.lastErr, s.lastErrAt
	if !s.retryAt.IsZero() {
		st.RetryIn = time.Until(s.retryAt).Round(time.Second).String()
	}
}
