package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/cluster"
	"github.com/fedrouter/fedrouter/routes"
)

// TestAdminErrorCodes checks that each kind of error answer carries its
// status and its code (docs/admin-api.md's table).
func TestAdminErrorCodes(t *testing.T) {
	h := startAdmin(t)
	cfgRoute := h.svc.AddConfig(routes.Spec{Kind: routes.KindExchange, Dest: "a", Src: "b", Exchange: "amq.topic", Key: "#"}, configCounters)
	h.expect("POST", "/api/v1/routes", queueRoute, http.StatusCreated)
	unknown := queueRoute
	unknown.Dest = "nowhere"
	invalid := queueRoute
	invalid.Queue = ""
	cases := []struct {
		name         string
		method, path string
		body         any
		token        string
		status       int
		code         api.Code
	}{
		{"duplicate", "POST", "/api/v1/routes", queueRoute, testToken, http.StatusConflict, api.CodeDuplicate},
		{"invalid spec", "POST", "/api/v1/routes", invalid, testToken, http.StatusBadRequest, api.CodeValidation},
		{"unknown field", "POST", "/api/v1/routes", `{"kind":"queue","nope":1}`, testToken, http.StatusBadRequest, api.CodeValidation},
		{"bad limit", "GET", "/api/v1/routes?limit=0", nil, testToken, http.StatusBadRequest, api.CodeValidation},
		{"unknown broker", "POST", "/api/v1/routes", unknown, testToken, http.StatusBadRequest, api.CodeUnknownBroker},
		{"no token", "GET", "/api/v1/routes", nil, "", http.StatusUnauthorized, api.CodeUnauthorized},
		{"no such route", "DELETE", "/api/v1/routes/feedbeef", nil, testToken, http.StatusNotFound, api.CodeNotFound},
		{"configured route", "DELETE", "/api/v1/routes/" + cfgRoute.ID, nil, testToken, http.StatusConflict, api.CodeConfigRoute},
		{"topology off", "GET", "/api/v1/topology", nil, testToken, http.StatusNotFound, api.CodeOff},
		{"not clustered", "GET", "/api/v1/cluster", nil, testToken, http.StatusNotFound, api.CodeOff},
		{"no destinations", "GET", "/api/v1/destinations", nil, testToken, http.StatusNotFound, api.CodeOff},
		{"no endpoint", "GET", "/api/v1/nope", nil, testToken, http.StatusNotFound, api.CodeNoEndpoint},
		{"method", "PUT", "/api/v1/routes", nil, testToken, http.StatusMethodNotAllowed, api.CodeMethod},
		{"too large", "POST", "/api/v1/routes", strings.Repeat(" ", MaxAdminBody+1), testToken, http.StatusRequestEntityTooLarge, api.CodeTooLarge},
	}
	for _, c := range cases {
		status, out := h.do(c.method, c.path, c.token, c.body)
		checkCode(t, c.name, status, out, c.status, c.code)
	}
	// The gate's refusals, which h.do's well-formed requests never meet.
	status, out, _ := h.raw("POST", "/api/v1/routes/flush", map[string]string{"Content-Type": "text/plain"})
	checkCode(t, "media type", status, out, http.StatusUnsupportedMediaType, api.CodeMediaType)
	status, out, _ = h.raw("GET", "/api/v1/routes", map[string]string{"Origin": "http://evil.example"})
	checkCode(t, "other origin", status, out, http.StatusForbidden, api.CodeForbidden)
}

// raw sends a request with the token and exactly the headers given.
func (h *adminHarness) raw(method, path string, headers map[string]string) (int, string, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // read to the end: nothing left to fail
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, string(out), resp.Header
}

// TestAdminErrorCodesOfService checks the codes of the Service's
// failures that only a running router or cluster member makes.
func TestAdminErrorCodesOfService(t *testing.T) {
	h := startAdmin(t)
	take := &TakeoverError{cluster.Takeover{RetryAfter: 3 * time.Second}}
	cases := []struct {
		err        error
		status     int
		code       api.Code
		retryAfter string
	}{
		{take, http.StatusServiceUnavailable, api.CodeInTakeover, "3"},
		{fmt.Errorf("%w: dial: refused", ErrStoreUnavailable), http.StatusServiceUnavailable, api.CodeStoreDown, "2"},
		{routes.ErrStopped, http.StatusServiceUnavailable, api.CodeUnavailable, ""},
		{routes.ErrDestinationRoute, http.StatusConflict, api.CodeDestinationRoute, ""},
		{errors.New("disk on fire"), http.StatusInternalServerError, api.CodeInternal, ""},
	}
	for _, c := range cases {
		h.svc.SetErr(c.err)
		status, out, header := h.raw("POST", "/api/v1/routes/flush", map[string]string{"Content-Type": "application/json"})
		checkCode(t, c.err.Error(), status, out, c.status, c.code)
		if got := header.Get("Retry-After"); got != c.retryAfter {
			t.Errorf("%v: Retry-After %q, want %q", c.err, got, c.retryAfter)
		}
	}
}

func checkCode(t *testing.T, name string, status int, out string, wantStatus int, wantCode api.Code) {
	t.Helper()
	var body api.ErrorBody
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Errorf("%s: body is not the error JSON: %v\n%s", name, err, out)
		return
	}
	if status != wantStatus || body.Code != wantCode || body.Error == "" {
		t.Errorf("%s: status %d code %q error %q, want status %d code %q and words", name, status, body.Code, body.Error, wantStatus, wantCode)
	}
}
