package api

// ErrorBody is every error answer: Error says what was wrong, in words
// for an operator; Code says which kind of error it is, for programs,
// and does not change between versions (match the code, never the words);
// Problems lists each problem of an invalid route spec.
type ErrorBody struct {
	Error    string   `json:"error"`
	Code     Code     `json:"code"`
	Problems []string `json:"problems,omitempty"`
}

// Code is an error's kind. A client that meets a code it does not know
// treats it as the status says.
type Code string

// The codes, with the status each comes with (docs/admin-api.md).
const (
	// CodeValidation (400): the request is wrong — an invalid route
	// (Problems lists each problem), bad JSON, an unknown field, a bad
	// query parameter.
	CodeValidation Code = "validation"
	// CodeUnknownBroker (400): a route names a broker the router does not
	// have.
	CodeUnknownBroker Code = "unknown-broker"
	// CodeUnauthorized (401): the token is missing or wrong.
	CodeUnauthorized Code = "unauthorized"
	// CodeForbidden (403): the Host is not the router's, or the request
	// comes from a web page of another origin.
	CodeForbidden Code = "forbidden"
	// CodeNotFound (404): no such route, or link.
	CodeNotFound Code = "not-found"
	// CodeOff (404): the router does not have what was asked for — link
	// state, a cluster, global destinations — in its configuration.
	CodeOff Code = "off"
	// CodeNoEndpoint (404): no such path in the API.
	CodeNoEndpoint Code = "no-endpoint"
	// CodeMethod (405): the path does not take this method (Allow says
	// which it does).
	CodeMethod Code = "method-not-allowed"
	// CodeDuplicate (409): the route, or link, exists already; nothing changed.
	// qpid-route-style callers treat it as success.
	CodeDuplicate Code = "duplicate"
	// CodeConfigRoute (409): the route, or link, comes from the configuration file:
	// change it there.
	CodeConfigRoute Code = "config-route"
	// CodeDestinationRoute (409): the route is a global destination's
	// flow, run by the router itself.
	CodeDestinationRoute Code = "destination-route"
	// CodeInvalidConfig (400): a reload found the configuration file
	// invalid (Problems lists each, as file:line); the running
	// configuration goes on unchanged.
	CodeInvalidConfig Code = "invalid-config"
	// CodeReloadRefused (409): the configuration file changes settings
	// that cannot change while the router runs (Problems names each key,
	// as file:line); nothing changed.
	CodeReloadRefused Code = "reload-refused"
	// CodeReloadBusy (409): another reload is in progress; nothing
	// changed: try again when it has answered.
	CodeReloadBusy Code = "reload-busy"
	// CodeTooLarge (413): the request body is over the bound.
	CodeTooLarge Code = "too-large"
	// CodeMediaType (415): a write without Content-Type: application/json.
	CodeMediaType Code = "media-type"
	// CodeThrottled (429): too many wrong tokens from this client; see
	// Retry-After.
	CodeThrottled Code = "throttled"
	// CodeInTakeover (503): a cluster member is taking the route over;
	// nothing changed; see Retry-After.
	CodeInTakeover Code = "in-takeover"
	// CodeStoreDown (503): the cluster's store is unreachable; nothing
	// changed; see Retry-After.
	CodeStoreDown Code = "store-down"
	// CodeUnavailable (503): the router is stopping, or the call did not
	// finish in time.
	CodeUnavailable Code = "unavailable"
	// CodeInternal (500): anything else.
	CodeInternal Code = "internal"
)
