// Package api is the admin API's vocabulary (docs/admin-api.md): the
// request and response bodies that router.AdminServer encodes and
// adminclient decodes, and the error body with its machine-readable code.
// It holds types only, so a client of the API needs neither the router
// nor what the router is built on (PostgreSQL, Prometheus).
//
// Route specs and statuses are routespec.Spec and routespec.Status (which
// package routes re-exports), the link state view topology.Snapshot, a
// global destination globaldest.Status: the API serves those packages'
// own types, with the JSON they define. Each is a leaf of the standard
// library (globaldest adds internal/glob), and adminclient/deps_test.go fails
// when a client of the API would again import go-amqp, pgx, Prometheus or
// any other module's package.
package api

import (
	"time"

	"github.com/fedrouter/fedrouter/routes/routespec"
)

// RoutePage is a page of GET /api/v1/routes?limit=N&after=CURSOR: the
// routes in list order, and the cursor of the next page ("" after the
// last).
type RoutePage struct {
	Routes []routespec.Status `json:"routes"`
	Next   string             `json:"next,omitempty"`
	// Partial, when set, says why the list is not the whole one: a
	// cluster member whose store cannot be read lists its own routes only.
	Partial string `json:"partial,omitempty"`
}

// Deleted is the body of a successful delete or flush.
type Deleted struct {
	Deleted int `json:"deleted"`
}

// RouterInfo is GET /api/v1/router.
type RouterInfo struct {
	RouterID string `json:"router_id"`
	Routes   int    `json:"routes"`
	Links    int    `json:"links"`
	Brokers  int    `json:"brokers"`
}

// NotReady is the 503 body of /readyz.
type NotReady struct {
	Error   string         `json:"error"`
	Brokers []BrokerStatus `json:"brokers"` // the brokers not Operational
}

// BrokerStatus is one broker connection (GET /api/v1/brokers): the state
// and the last error as text. Since is when the connection entered its
// State. In Waiting, RetryAt is when the next attempt starts and RetryIn
// the time left until then when the router answered (a Go duration
// string, whole seconds rounded up).
type BrokerStatus struct {
	Broker      string    `json:"broker"`
	State       string    `json:"state"`
	Since       time.Time `json:"since"`
	URL         string    `json:"url"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	Attempt     int       `json:"attempt"`
	RetryAt     time.Time `json:"retry_at,omitzero"`
	RetryIn     string    `json:"retry_in,omitempty"`
	Generation  uint64    `json:"generation"`
}

// RetryLeft is the time from now until the next attempt in whole
// seconds, rounded up (an attempt 0.2 s away is 1s off, not 0s), never
// below zero; zero when no attempt is scheduled.
func (b BrokerStatus) RetryLeft(now time.Time) time.Duration {
	left := b.RetryAt.Sub(now)
	if b.RetryAt.IsZero() || left <= 0 {
		return 0
	}
	return (left + time.Second - 1).Truncate(time.Second)
}
