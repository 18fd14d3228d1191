package adminclient

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/api"
)

// ErrBadURL is the error New gives for a base URL that cannot be the admin
// API's: not http or https, or no host.
var ErrBadURL = errors.New("adminclient: not an admin API URL")

// Error is every failed call: no answer at all (Status 0, Err says why),
// an error answer from the router (Message holds its own words), an answer
// that is not the API's (a proxy's page, a redirect: Body or Location say
// what came), or a success answer that could not be read (Err).
//
// It never holds the bearer token: the token travels in a header, and any
// text taken from an answer has it blanked out before it lands here.
type Error struct {
	Method string
	URL    string // the request's URL, without user information
	Status int    // the HTTP status; 0 when no answer came
	// Message is the router's {"error": ...}: "" when the answer was not
	// the API's JSON error.
	Message string
	// Code is the router's machine-readable kind of error (api.Code*):
	// what programs match, never Message. "" when the answer was not the
	// API's JSON error (or came from a router older than codes).
	Code api.Code
	// Problems lists each problem of an invalid route spec (400).
	Problems []string
	// Body is the start of an answer that was not the API's JSON, so an
	// operator can tell a proxy's page from the router.
	Body string
	// Location is where a redirect pointed. The client does not follow
	// redirects: the admin API never sends one, so a redirect means the
	// URL points at something else, and following it could carry the
	// token there.
	Location string
	// RetryAfter is the answer's Retry-After (a 503 during a cluster
	// takeover or a store outage, a 429): 0 when it had none.
	RetryAfter time.Duration
	// Err is the cause when no answer came (dial, timeout, cancel) or a
	// success answer could not be read or decoded.
	Err error
}

func (e *Error) Error() string {
	at := fmt.Sprintf("fedrouter admin API %s %s", e.Method, e.URL)
	switch {
	case e.Status == 0:
		return fmt.Sprintf("%s: %v", at, e.Err)
	case e.Err != nil:
		return fmt.Sprintf("%s: answer %s: %v", at, statusLine(e.Status), e.Err)
	case e.Message != "" && e.RetryAfter > 0:
		return fmt.Sprintf("%s: %s (HTTP %d, Retry-After %s)", at, e.Message, e.Status, e.RetryAfter)
	case e.Message != "":
		return fmt.Sprintf("%s: %s (HTTP %d)", at, e.Message, e.Status)
	case e.Location != "":
		return fmt.Sprintf("%s: redirected (%s) to %s; the admin API does not redirect: give its own URL", at, statusLine(e.Status), e.Location)
	case e.Body == "":
		return fmt.Sprintf("%s: %s with an empty body, not the API's JSON", at, statusLine(e.Status))
	}
	return fmt.Sprintf("%s: %s, not the API's JSON: %s", at, statusLine(e.Status), e.Body)
}

// Unwrap gives the transport or decoding error, if any: errors.Is(err,
// context.DeadlineExceeded) and the like work through it.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the call failed because no answer came in time
// (Options.Timeout or the context's deadline).
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return e.Status == 0 && errors.As(e.Err, &t) && t.Timeout()
}

func statusLine(code int) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s", code, http.StatusText(code)))
}

// snippet is the start of a body for an error message: one line's worth.
func snippet(body []byte) string {
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// retryAfter reads a Retry-After header given in seconds (the form the
// admin API sends); anything else is ignored.
func retryAfter(h string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n <= 0 || n > 3600 {
		return 0
	}
	return time.Duration(n) * time.Second
}
