package routes

import "github.com/fedrouter/fedrouter/routes/routespec"

// What the router reports of a route, a link and a transit forwarder is
// routes/routespec's (the admin API's vocabulary); aliased here.
type (
	Origin          = routespec.Origin
	State           = routespec.State
	Counters        = routespec.Counters
	Status          = routespec.Status
	LinkStatus      = routespec.LinkStatus
	TransitStatus   = routespec.TransitStatus
	IngressRefusals = routespec.IngressRefusals
)

const (
	OriginConfig      = routespec.OriginConfig
	OriginRuntime     = routespec.OriginRuntime
	OriginDestination = routespec.OriginDestination

	StateWaiting     = routespec.StateWaiting
	StateConnecting  = routespec.StateConnecting
	StateOperational = routespec.StateOperational
	StateStalled     = routespec.StateStalled
	StateFailed      = routespec.StateFailed
	StateClosed      = routespec.StateClosed
)
