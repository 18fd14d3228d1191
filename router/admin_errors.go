package router

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/routes"
)

// writeServiceError answers one of the Service's errors: its status and
// code (docs/admin-api.md), and Retry-After when the same change can be
// made again in a moment.
func writeServiceError(w http.ResponseWriter, err error) {
	var se *routes.SpecError
	if errors.As(err, &se) {
		writeJSON(w, http.StatusBadRequest, api.ErrorBody{Error: err.Error(), Code: api.CodeValidation, Problems: se.Problems})
		return
	}
	var re *ReloadError
	if errors.As(err, &re) {
		status, code := http.StatusConflict, api.CodeReloadRefused
		switch {
		case errors.Is(err, ErrReloadInvalid):
			status, code = http.StatusBadRequest, api.CodeInvalidConfig
		case errors.Is(err, ErrReloadBusy):
			status, code = http.StatusConflict, api.CodeReloadBusy
		}
		writeJSON(w, status, api.ErrorBody{Error: re.Kind.Error(), Code: code, Problems: re.Problems})
		return
	}
	if errors.Is(err, ErrLinkDuplicate) {
		writeCode(w, http.StatusConflict, api.CodeDuplicate, err.Error())
		return
	}
	if errors.Is(err, routes.ErrDuplicate) {
		// qpid-route's exact words: the CLI shows them as a warning.
		writeCode(w, http.StatusConflict, api.CodeDuplicate, routes.ErrDuplicate.Error())
		return
	}
	var te *TakeoverError
	if errors.As(err, &te) {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(te.RetryAfter.Seconds())))))
	} else if errors.Is(err, ErrStoreUnavailable) {
		// A cluster member whose store is down: the change can be made
		// again in a moment.
		w.Header().Set("Retry-After", "2")
	}
	status, code := serviceErrorCode(err)
	writeCode(w, status, code, err.Error())
}

// serviceErrorCode is the status and code of an error of the Service
// other than a spec error or a duplicate.
func serviceErrorCode(err error) (int, api.Code) {
	switch {
	case errors.Is(err, routes.ErrNotFound), errors.Is(err, ErrNoLink):
		return http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, ErrTopologyOff), errors.Is(err, ErrNotClustered), errors.Is(err, ErrNoDestinations):
		return http.StatusNotFound, api.CodeOff
	case errors.Is(err, routes.ErrConfigRoute), errors.Is(err, ErrLinkConfigured):
		return http.StatusConflict, api.CodeConfigRoute
	case errors.Is(err, routes.ErrDestinationRoute):
		return http.StatusConflict, api.CodeDestinationRoute
	case errors.Is(err, routes.ErrUnknownBroker):
		return http.StatusBadRequest, api.CodeUnknownBroker
	case errors.Is(err, ErrTakeover):
		return http.StatusServiceUnavailable, api.CodeInTakeover
	case errors.Is(err, ErrStoreUnavailable):
		return http.StatusServiceUnavailable, api.CodeStoreDown
	case errors.Is(err, routes.ErrStopped), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, api.CodeUnavailable
	}
	return http.StatusInternalServerError, api.CodeInternal
}

// writeError answers an error whose status says its kind (the request
// gate's refusals, a bad body or parameter).
func writeError(w http.ResponseWriter, status int, msg string) {
	writeCode(w, status, statusCode(status), msg)
}

func writeCode(w http.ResponseWriter, status int, code api.Code, msg string) {
	writeJSON(w, status, api.ErrorBody{Error: msg, Code: code})
}

// statusCode is the code of an error that only its status tells apart.
func statusCode(status int) api.Code {
	switch status {
	case http.StatusBadRequest:
		return api.CodeValidation
	case http.StatusUnauthorized:
		return api.CodeUnauthorized
	case http.StatusForbidden:
		return api.CodeForbidden
	case http.StatusNotFound:
		return api.CodeNotFound
	case http.StatusMethodNotAllowed:
		return api.CodeMethod
	case http.StatusRequestEntityTooLarge:
		return api.CodeTooLarge
	case http.StatusUnsupportedMediaType:
		return api.CodeMediaType
	case http.StatusTooManyRequests:
		return api.CodeThrottled
	case http.StatusServiceUnavailable:
		return api.CodeUnavailable
	}
	return api.CodeInternal
}
