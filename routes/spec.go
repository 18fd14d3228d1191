// Package routes holds fedrouter's routes: how they are named and
// validated (the vocabulary is routes/routespec, re-exported here), where
// durable runtime routes are kept (the state file and its journal:
// statefile.go, journal.go), and the Manager that runs each route over
// its two brokers' connections.
package routes

import (
	"errors"

	"github.com/fedrouter/fedrouter/routes/routespec"
)

// A route's specification lives in routes/routespec, a leaf that the admin
// API's clients import without the router (docs/architecture.md); these
// aliases keep its names here, where the rest of the router uses them.
type (
	Kind         = routespec.Kind
	RejectPolicy = routespec.RejectPolicy
	Spec         = routespec.Spec
	SpecError    = routespec.SpecError
	Network      = routespec.Network
)

const (
	KindQueue    = routespec.KindQueue
	KindExchange = routespec.KindExchange
	KindDynamic  = routespec.KindDynamic

	RejectAtSource = routespec.RejectAtSource
	DeadLetter     = routespec.DeadLetter

	DefaultCredit         = routespec.DefaultCredit
	DefaultCost           = routespec.DefaultCost
	DefaultOutcomeTimeout = routespec.DefaultOutcomeTimeout
	MaxCredit             = routespec.MaxCredit
	MaxNameLen            = routespec.MaxNameLen
)

// Errors of this package. ErrDuplicate's text is qpid-route's, shown as
// is: scripts written for qpid-route look for it.
var (
	//lint:ignore ST1005 qpid-route's words, which its users' scripts match
	ErrDuplicate   = errors.New("Duplicate route - ignoring")
	ErrNotFound    = errors.New("routes: no such route")
	ErrConfigRoute = errors.New("routes: route is defined in the configuration file; edit the file to remove it")
	// ErrDestinationRoute: the route is a global destination's flow; it
	// ends when the consumers move (destinations: in the configuration).
	ErrDestinationRoute = errors.New("routes: route moves a global destination's messages to its consumers and ends with them (follow_consumers in the destinations: entry)")
	ErrUnknownBroker    = errors.New("routes: unknown broker")
	ErrStopped          = errors.New("routes: manager stopped")
)
