package router

import (
	"net/http"
	"testing"

	"github.com/fedrouter/fedrouter/api"
)

// POST /api/v1/reload: the answer as JSON with [] for empty lists, each
// refusal with its status, code and problems, the token required, and a
// token swapped by SetAdminToken: the old one refused from then on.
func TestAdminReload(t *testing.T) {
	h := startAdmin(t)
	h.svc.SetReload(api.Reload{File: "r.yaml", Changed: true, RoutesAdded: []api.ReloadRoute{{ID: "abc", Route: "b(ex=x) <= a(queue=q)"}},
		RoutesRemoved: []api.ReloadRoute{}, RoutesChanged: []api.ReloadRoute{}, RoutesUnchanged: 2, BrokersRedialed: []string{}, Settings: []string{"admin token"}}, nil)
	h.expect(http.MethodPost, "/api/v1/reload", nil, http.StatusOK,
		`"id": "abc"`, `"routes_removed": []`, `"routes_unchanged": 2`, `"admin token"`)
	if st, _ := h.do(http.MethodPost, "/api/v1/reload", "", nil); st != http.StatusUnauthorized {
		t.Fatalf("reload without a token: %d", st)
	}
	for _, c := range []struct {
		err    error
		status int
		code   api.Code
	}{
		{&ReloadError{Kind: ErrReloadInvalid, Problems: []string{"r.yaml:3: unknown key colour"}}, http.StatusBadRequest, api.CodeInvalidConfig},
		{&ReloadError{Kind: ErrReloadRefused, Problems: []string{"r.yaml:1: router_id cannot change while the router runs"}}, http.StatusConflict, api.CodeReloadRefused},
		{&ReloadError{Kind: ErrReloadBusy}, http.StatusConflict, api.CodeReloadBusy},
	} {
		h.svc.SetReload(api.Reload{}, c.err)
		want := []string{`"code": "` + string(c.code) + `"`}
		if re := c.err.(*ReloadError); len(re.Problems) > 0 {
			want = append(want, `"problems": [`, re.Problems[0])
		}
		h.expect(http.MethodPost, "/api/v1/reload", nil, c.status, want...)
	}
	if st, _ := h.do(http.MethodGet, "/api/v1/reload", testToken, nil); st != http.StatusMethodNotAllowed {
		t.Fatalf("GET reload: %d", st)
	}

	const next = "the-next-token-0123456789"
	if err := h.srv.SetAdminToken("short"); err == nil {
		t.Fatal("a short token was taken")
	}
	if err := h.srv.SetAdminToken(next); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.do(http.MethodGet, "/api/v1/router", testToken, nil); st != http.StatusUnauthorized {
		t.Fatalf("the old token after the swap: %d", st)
	}
	if st, body := h.do(http.MethodGet, "/api/v1/router", next, nil); st != http.StatusOK {
		t.Fatalf("the new token: %d %s", st, body)
	}
}
