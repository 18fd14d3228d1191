package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/router"
)

// Defaults of the flags every API command takes.
const (
	defaultRouterURL = "http://" + router.DefaultAdminListen
	defaultTimeout   = 10 * time.Second
)

// clientFlags are the flags of every command that talks to a running
// router. They sit on each leaf command, so they go after the verb:
// `fedrouter route list --router URL`.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "router", Value: defaultRouterURL, EnvVars: []string{"FEDROUTER_ROUTER"}, Usage: "admin API `URL` of the running router"},
		&cli.StringFlag{Name: "token", EnvVars: []string{"FEDROUTER_TOKEN"}, Usage: "admin API bearer `TOKEN` (the router's admin.token)"},
		&cli.DurationFlag{Name: "timeout", Value: defaultTimeout, Usage: "give up on the router after `D`"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "show each request and the result"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors (no duplicate warning, no counts)"},
	}
}

// apiClient calls one router's admin API for one command.
type apiClient struct {
	base    string // scheme://host:port, no trailing slash
	token   string
	tr      *http.Transport // own transport: close() leaves no idle connections behind
	hc      *http.Client
	timeout time.Duration
	trace   io.Writer // -v: requests and statuses; nil otherwise
}

// newAPIClient builds the client from the command's flags. Call close.
func newAPIClient(c *cli.Context) (*apiClient, error) {
	base, err := routerURL(c.String("router"))
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	a := &apiClient{
		base:    base,
		token:   c.String("token"),
		tr:      tr,
		hc:      &http.Client{Transport: tr, Timeout: c.Duration("timeout")},
		timeout: c.Duration("timeout"),
	}
	if c.Bool("verbose") {
		a.trace = c.App.ErrWriter
	}
	return a, nil
}

func (a *apiClient) close() { a.tr.CloseIdleConnections() }

// routerURL accepts a URL or a bare host:port (taken as http).
func routerURL(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--router %q: want the admin API's URL, like %s", s, defaultRouterURL)
	}
	return strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/"), nil
}

// apiError is an error answer from the router: the status and its message.
type apiError struct {
	Status   int
	Message  string
	Problems []string
}

func (e *apiError) Error() string { return e.Message }

// call sends in (if not nil) as JSON and decodes a 2xx answer into out (if
// not nil). An error answer comes back as *apiError.
func (a *apiClient) call(ctx context.Context, method, path string, in, out any) error {
	req, err := a.request(ctx, method, path, in)
	if err != nil {
		return err
	}
	if a.trace != nil {
		fmt.Fprintf(a.trace, "> %s %s\n", method, req.URL)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return a.transportError(err)
	}
	defer resp.Body.Close()
	if a.trace != nil {
		fmt.Fprintf(a.trace, "< %s\n", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the router's answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return answerError(resp, body)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("the router's answer to %s %s is not the JSON expected: %w", method, path, err)
	}
	return nil
}

func (a *apiClient) request(ctx context.Context, method, path string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		js, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	return req, nil
}

// transportError says the router could not be reached, and what to check.
func (a *apiClient) transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() {
		return fmt.Errorf("router at %s did not answer within %s (--timeout)", a.base, a.timeout)
	}
	if ue != nil {
		err = ue.Err // the URL is said once, below
	}
	return fmt.Errorf("cannot reach router at %s: %w (is `fedrouter run` running? --router)", a.base, err)
}

// answerError decodes the API's {"error": ...}; a body that is not one
// (a proxy's page) is shown by its status and start.
func answerError(resp *http.Response, body []byte) error {
	var eb router.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error == "" {
		snippet := strings.TrimSpace(string(body))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "..."
		}
		return &apiError{Status: resp.StatusCode, Message: fmt.Sprintf("router answered %s: %s", resp.Status, snippet)}
	}
	msg := eb.Error
	if resp.StatusCode == http.StatusUnauthorized {
		msg += " (give --token or set FEDROUTER_TOKEN)"
	}
	return &apiError{Status: resp.StatusCode, Message: msg, Problems: eb.Problems}
}
