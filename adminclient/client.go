// Package adminclient is the one client of a running fedrouter's admin
// HTTP API (docs/admin-api.md, served by router.AdminServer). The CLI's
// verbs, fedbench and fedchaos all go through it, so the paths, the bearer
// token and the error body are handled in one place.
//
// Answers decode into the types the server encodes (routespec.Status,
// api.BrokerStatus, topology.Snapshot, ...) rather than copies of them:
// a field the server adds reaches every client with nothing to update.
package adminclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/routes/routespec"
	"github.com/fedrouter/fedrouter/topology"
)

// DefaultTimeout bounds a call when Options.Timeout is zero: long enough
// for the router's own 30 s bound on a call to be rare, short enough that
// an operator is not left waiting on a wedged process.
const DefaultTimeout = 10 * time.Second

// maxAnswer bounds what is read of an answer: a route list of thousands of
// routes is a few MiB, so anything near this is not the router.
const maxAnswer = 64 << 20

// Options configure a Client; the zero value is a client without a token,
// with DefaultTimeout and no trace.
type Options struct {
	// Token is the router's admin.token, sent as "Authorization: Bearer
	// TOKEN" on every call. It never appears in an error or a trace line.
	Token string
	// Timeout bounds each call, from connecting to the end of the answer.
	// Zero: DefaultTimeout.
	Timeout time.Duration
	// Trace, when set, gets a line per request ("> GET URL") and per
	// answer ("< 200 OK"): what the CLI's -v shows.
	Trace io.Writer
	// CAFile (PEM) holds the certificates an https router's certificate
	// is checked against, instead of the system's roots: the CA that
	// signed it, or the router's own self-signed certificate.
	CAFile string
	// Fallbacks are other routers' URLs (the members of a router cluster):
	// a call whose connection cannot be made goes to the next, in order.
	// Only a failed dial moves on — the request was never sent — so a
	// change is never made twice.
	Fallbacks []string
	// Socket, when set, is the router's Unix socket (UsableSocket): every
	// call goes there, whatever the URL's host, and never over TCP.
	Socket string
}

// Client calls one router's admin API. It is safe for concurrent use.
// Close it when done.
type Client struct {
	base  string   // scheme://host[:port][/path], no trailing slash
	more  []string // fallbacks, in the same form
	token string
	trace io.Writer
	// tr is the client's own transport, so Close leaves no idle
	// keep-alive connection (and its goroutines) behind: the CLI's and the
	// tests' leak checks rely on it.
	tr *http.Transport
	hc *http.Client
}

// New returns a client of the admin API at baseURL (http or https, e.g.
// http://127.0.0.1:9595). User information in the URL is dropped: the API
// authenticates with Options.Token only.
func New(baseURL string, o Options) (*Client, error) {
	base, err := cleanBase(baseURL)
	if err != nil {
		return nil, err
	}
	var more []string
	for _, f := range o.Fallbacks {
		b, err := cleanBase(f)
		if err != nil {
			return nil, err
		}
		more = append(more, b)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.Socket != "" {
		tr.DialContext = socketDialer(o.Socket)
	}
	if o.CAFile != "" {
		roots, err := loadRoots(o.CAFile)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &Client{
		base:  base,
		more:  more,
		token: o.Token,
		trace: o.Trace,
		tr:    tr,
		hc: &http.Client{Transport: tr, Timeout: o.Timeout,
			// Redirects come back as answers (an *Error), not followed:
			// see Error.Location.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}, nil
}

// cleanBase checks an API URL and drops its user information and trailing
// slash.
func cleanBase(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: %q (want http://host:port or https://host:port)", ErrBadURL, raw)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"), nil
}

// loadRoots reads a PEM file of certificates to trust.
func loadRoots(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("adminclient: CA file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("adminclient: CA file %s: no PEM certificate in it", path)
	}
	return roots, nil
}

// BaseURL is the API's URL as the client uses it: no user information, no
// trailing slash.
func (c *Client) BaseURL() string { return c.base }

// Close drops the client's idle connections. Calls made after it open
// new ones.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// PageSize is how many routes Routes asks for at a time.
const PageSize = 1000

// Routes lists every route, configured and runtime, a page at a time
// (GET /api/v1/routes?limit=&after=) so that no answer grows with the
// number of routes; from a router older than paging, in one answer. A
// route added or deleted meanwhile may or may not be listed; the others
// are listed once each.
func (c *Client) Routes(ctx context.Context) ([]routespec.Status, error) {
	all, _, err := c.RoutesPartial(ctx)
	return all, err
}

// RoutesPartial is Routes, and why the list is not the whole one when a
// page said so (api.RoutePage.Partial: a cluster member whose store
// cannot be read lists its own routes only).
func (c *Client) RoutesPartial(ctx context.Context) (all []routespec.Status, partial string, err error) {
	all = []routespec.Status{} // none is [], as the router answers it
	after := ""
	for {
		p, err := c.RoutesPage(ctx, after, PageSize)
		if err != nil {
			return nil, "", err
		}
		all = append(all, p.Routes...)
		if p.Partial != "" {
			partial = p.Partial
		}
		if p.Next == "" {
			return all, partial, nil
		}
		after = p.Next
	}
}

// RoutesPage is one page of the route list: at most limit routes after the
// cursor after ("" for the first page), and the next page's cursor in
// Next ("" after the last). A router older than paging answers every
// route, with no Next.
func (c *Client) RoutesPage(ctx context.Context, after string, limit int) (api.RoutePage, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/api/v1/routes?"+q.Encode(), nil, &raw); err != nil {
		return api.RoutePage{}, err
	}
	var p api.RoutePage
	var err error
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '[' {
		err = json.Unmarshal(raw, &p.Routes) // a router that ignores ?limit: the whole list
	} else {
		err = json.Unmarshal(raw, &p)
	}
	if err != nil {
		return api.RoutePage{}, &Error{Method: http.MethodGet, URL: c.base + "/api/v1/routes", Status: http.StatusOK, Err: fmt.Errorf("not the JSON expected: %w", err)}
	}
	return p, nil
}

// AddRoute adds a runtime route and returns its status. A route that
// exists already is an *Error with Status 409 and Code api.CodeDuplicate,
// which qpid-route-style callers treat as success.
func (c *Client) AddRoute(ctx context.Context, spec routespec.Spec) (routespec.Status, error) {
	var st routespec.Status
	err := c.do(ctx, http.MethodPost, "/api/v1/routes", spec, &st)
	return st, err
}

// DeleteRoute deletes the runtime route spec names (the fields that make
// its ID; options are ignored).
func (c *Client) DeleteRoute(ctx context.Context, spec routespec.Spec) error {
	return c.do(ctx, http.MethodPost, "/api/v1/routes/delete", spec, nil)
}

// AddLink adds a link between two of the router's brokers (qpid-route's
// link add).
func (c *Client) AddLink(ctx context.Context, l api.Link) error {
	return c.do(ctx, http.MethodPost, "/api/v1/links", l, nil)
}

// DeleteLink deletes a link AddLink added.
func (c *Client) DeleteLink(ctx context.Context, l api.Link) error {
	return c.do(ctx, http.MethodPost, "/api/v1/links/delete", l, nil)
}

// DeleteRouteID deletes the runtime route with this ID.
func (c *Client) DeleteRouteID(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/routes/"+url.PathEscape(id), nil, nil)
}

// FlushRoutes deletes every runtime route, or only those to broker dest
// when it is not "", and says how many went. Configured routes stay.
func (c *Client) FlushRoutes(ctx context.Context, dest string) (int, error) {
	path := "/api/v1/routes/flush"
	if dest != "" {
		path += "?dest=" + url.QueryEscape(dest)
	}
	var d api.Deleted
	err := c.do(ctx, http.MethodPost, path, nil, &d)
	return d.Deleted, err
}

// Links lists the links routes run over, with their transit queues.
func (c *Client) Links(ctx context.Context) ([]routespec.LinkStatus, error) {
	var ls []routespec.LinkStatus
	err := c.do(ctx, http.MethodGet, "/api/v1/links", nil, &ls)
	return ls, err
}

// Brokers lists the broker connections.
func (c *Client) Brokers(ctx context.Context) ([]api.BrokerStatus, error) {
	var bs []api.BrokerStatus
	err := c.do(ctx, http.MethodGet, "/api/v1/brokers", nil, &bs)
	return bs, err
}

// Router says which router answers and how much it holds.
func (c *Client) Router(ctx context.Context) (api.RouterInfo, error) {
	var ri api.RouterInfo
	err := c.do(ctx, http.MethodGet, "/api/v1/router", nil, &ri)
	return ri, err
}

// Topology is the router's link-state view. A router that does not flood
// link state answers 404: an *Error with that Status.
func (c *Client) Topology(ctx context.Context) (topology.Snapshot, error) {
	var snap topology.Snapshot
	err := c.do(ctx, http.MethodGet, "/api/v1/topology", nil, &snap)
	return snap, err
}

// Healthz says whether the process serves HTTP at all; it needs no token.
func (c *Client) Healthz(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil)
}

// Ready asks /readyz whether every broker connection is Operational. Not
// ready is an answer, not an error: false, with the brokers that are not
// Operational, so callers can poll on it.
func (c *Client) Ready(ctx context.Context) (bool, []api.BrokerStatus, error) {
	resp, body, err := c.exchange(ctx, http.MethodGet, "/readyz", nil)
	if err != nil {
		return false, nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil, nil
	case http.StatusServiceUnavailable:
		var nr api.NotReady
		if json.Unmarshal(body, &nr) == nil && nr.Error != "" {
			return false, nr.Brokers, nil
		}
	}
	return false, nil, c.answerError(resp, body)
}

// do sends in (when not nil) as JSON and decodes a 2xx answer into out
// (when not nil). Every failure past building the request is an *Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, body, err := c.exchange(ctx, method, path, in)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return c.answerError(resp, body)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return c.fail(resp.Request, resp.StatusCode, fmt.Errorf("not the JSON expected: %w", err))
	}
	return nil
}

// exchange sends one request and reads the whole answer, tracing both; a
// router that cannot be dialled gives way to the next fallback.
func (c *Client) exchange(ctx context.Context, method, path string, in any) (*http.Response, []byte, error) {
	var req *http.Request
	var resp *http.Response
	var err error
	for _, base := range append([]string{c.base}, c.more...) {
		if req, err = c.request(ctx, base, method, path, in); err != nil {
			return nil, nil, err
		}
		c.tracef("> %s %s\n", method, req.URL)
		if resp, err = c.hc.Do(req); err == nil || !dialFailed(err) {
			break
		}
		c.tracef("< %v\n", err)
	}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // Error names the method and URL once
		}
		return nil, nil, c.fail(req, 0, err)
	}
	// Read to the end or the limit: closing has nothing to report.
	defer func() { _ = resp.Body.Close() }()
	c.tracef("< %s\n", resp.Status)
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, nil, c.fail(req, resp.StatusCode, fmt.Errorf("reading: %w", err))
	}
	return resp, body, nil
}

// dialFailed says whether err is a connection that could not be made: the
// request never left.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (c *Client) request(ctx context.Context, base, method, path string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		js, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("adminclient: encoding the %s %s body: %w", method, path, err)
		}
		body = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, fmt.Errorf("adminclient: %s %s: %w", method, path, err)
	}
	if method != http.MethodGet && method != http.MethodHead {
		// Every write, with a body or not: the router refuses any other
		// type (a web page's form or text/plain POST).
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// answerError is an error answer: the API's {"error": ...} when it is
// one; otherwise what came, so a proxy's page or a redirect is plain.
func (c *Client) answerError(resp *http.Response, body []byte) *Error {
	e := c.fail(resp.Request, resp.StatusCode, nil)
	e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	var eb api.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != "" {
		e.Message, e.Code, e.Problems = c.redact(eb.Error), eb.Code, eb.Problems
		for i, p := range e.Problems {
			e.Problems[i] = c.redact(p)
		}
		return e
	}
	if resp.StatusCode/100 == 3 {
		e.Location = c.redact(resp.Header.Get("Location"))
	}
	e.Body = c.redact(snippet(body))
	return e
}

func (c *Client) fail(req *http.Request, status int, err error) *Error {
	return &Error{Method: req.Method, URL: req.URL.String(), Status: status, Err: err}
}

// redact blanks the token out of text taken from an answer: a proxy or a
// debugging endpoint may echo the request's headers back.
func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "[token]")
}

func (c *Client) tracef(format string, args ...any) {
	if c.trace != nil {
		_, _ = fmt.Fprintf(c.trace, format, args...) // a debugging aid: it does not fail the call
	}
}

// Metrics returns the router's /metrics page (Prometheus text).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	resp, body, err := c.exchange(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return "", err
	}
	if resp.StatusCode/100 != 2 {
		return "", c.answerError(resp, body)
	}
	return string(body), nil
}
