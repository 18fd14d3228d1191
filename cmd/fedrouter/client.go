package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/config"
)

// Defaults of the flags every API command takes.
const (
	defaultRouterURL = "http://" + config.DefaultAdminListen
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

// newAPIClient builds the admin API client from the command's flags. A
// bare host:port is taken as http, as operators type it. Call Close.
func newAPIClient(c *cli.Context) (*adminclient.Client, error) {
	s := c.String("router")
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	o := adminclient.Options{Token: c.String("token"), Timeout: c.Duration("timeout")}
	if c.Bool("verbose") {
		o.Trace = c.App.ErrWriter
	}
	api, err := adminclient.New(s, o)
	if err != nil {
		return nil, fmt.Errorf("--router %q: want the admin API's URL, like %s", s, defaultRouterURL)
	}
	return api, nil
}

// cliError words a failed call for an operator: the router's own message
// (what qpid-route users expect to read), or which flag to check when the
// router did not answer. Other failures keep the client's full text.
func cliError(c *cli.Context, api *adminclient.Client, err error) error {
	var ae *adminclient.Error
	if !errors.As(err, &ae) {
		return err
	}
	text := ae.Message
	switch {
	case ae.Timeout():
		text = fmt.Sprintf("router at %s did not answer within %s (--timeout)", api.BaseURL(), c.Duration("timeout"))
	case ae.Status == 0:
		text = fmt.Sprintf("cannot reach router at %s: %v (is `fedrouter run` running? --router)", api.BaseURL(), ae.Err)
	case text == "":
		return err
	case ae.Status == 401:
		text += " (give --token or set FEDROUTER_TOKEN)"
	}
	return &shownError{text: text, err: err}
}

// shownError is an error as the CLI prints it, still unwrapping to the
// client's *adminclient.Error.
type shownError struct {
	text string
	err  error
}

func (e *shownError) Error() string { return e.text }
func (e *shownError) Unwrap() error { return e.err }
