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
// `fedrouter route list --router URL`. --config is the usual way: the
// router's own file gives its URL, its token (the generated one too) and
// its certificate; the other flags replace what it gives.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		configFlag(),
		&cli.StringFlag{Name: "router", EnvVars: []string{"FEDROUTER_ROUTER"}, Usage: "admin API `URL` of the running router (default: from --config, else " + defaultRouterURL + "); several, comma-separated (a cluster's members), are tried in turn when one cannot be reached"},
		&cli.StringFlag{Name: "token", EnvVars: []string{"FEDROUTER_TOKEN"}, Usage: "admin API bearer `TOKEN`"},
		&cli.StringFlag{Name: "token-file", EnvVars: []string{"FEDROUTER_TOKEN_FILE"}, Usage: "read the admin API token from `FILE`"},
		&cli.StringFlag{Name: "ca-file", EnvVars: []string{"FEDROUTER_CA_FILE"}, Usage: "PEM `FILE` of the certificates an https router's is checked against (default: with --config, the router's own)"},
		&cli.DurationFlag{Name: "timeout", Aliases: []string{"t"}, Value: defaultTimeout, Usage: "give up on the router after `D` (qpid-route's -t)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "show each request and the result"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors (no listing, no duplicate warning, no counts): the exit status says the rest"},
	}
}

// newAPIClient builds the admin API client from the command's flags:
// --config's view of the router first, each other flag over it. A bare
// host:port is taken as http, as operators type it. Call Close.
func newAPIClient(c *cli.Context) (*adminclient.Client, error) {
	s := defaultRouterURL
	var o adminclient.Options
	if f := c.String("config"); f != "" {
		cfg, err := config.Load(f)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if sock, ok := cfg.AdminSocketPath(); ok && adminclient.UsableSocket(sock) && !c.IsSet("router") && !c.IsSet("token") && !c.IsSet("token-file") {
			// Beside the router: its Unix socket, no token sent anywhere.
			return adminclient.New(adminclient.LocalURL, localOptions(c, sock))
		}
		e, err := cfg.AdminEndpoint()
		if err != nil {
			return nil, fmt.Errorf("--config %s: %w", f, err)
		}
		s, o = e.URL, adminclient.Options{Token: e.Token, CAFile: e.CAFile}
	}
	var more []string
	if r := c.String("router"); r != "" {
		// Several routers, comma-separated (the members of a cluster):
		// the next is tried when one cannot be reached.
		urls := strings.Split(r, ",")
		s = urls[0]
		for _, u := range urls[1:] {
			more = append(more, withScheme(strings.TrimSpace(u)))
		}
	}
	s = withScheme(strings.TrimSpace(s))
	o.Fallbacks = more
	switch {
	case c.String("token") != "":
		o.Token = c.String("token")
	case c.String("token-file") != "":
		tok, err := config.ReadTokenFile(c.String("token-file"))
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		o.Token = tok
	}
	if ca := c.String("ca-file"); ca != "" {
		o.CAFile = ca
	}
	o.Timeout = c.Duration("timeout")
	if c.Bool("verbose") {
		o.Trace = c.App.ErrWriter
	}
	for _, u := range append([]string{s}, more...) {
		if _, err := adminclient.New(u, adminclient.Options{}); errors.Is(err, adminclient.ErrBadURL) {
			return nil, fmt.Errorf("--router %q: want the admin API's URL, like %s", u, defaultRouterURL)
		}
	}
	return adminclient.New(s, o)
}

// localOptions are the client's options over the router's Unix socket.
func localOptions(c *cli.Context, socket string) adminclient.Options {
	o := adminclient.Options{Socket: socket, Timeout: c.Duration("timeout")}
	if c.Bool("verbose") {
		o.Trace = c.App.ErrWriter
	}
	return o
}

// withScheme takes a bare host:port as http, as operators type it.
func withScheme(s string) string {
	if !strings.Contains(s, "://") {
		return "http://" + s
	}
	return s
}

// cliError words a failed call for an operator: the router's own message
// (what qpid-route users expect to read), or which flag to check when the
// router did not answer. Other failures keep the client's full text.
func cliError(c *cli.Context, api *adminclient.Client, err error) error {
	var ae *adminclient.Error
	var shown *shownError
	if errors.As(err, &shown) || !errors.As(err, &ae) {
		return err // worded already by the command, or not the router's
	}
	text := plainText(ae.Message)
	switch {
	case ae.Timeout():
		text = fmt.Sprintf("router at %s did not answer within %s (--timeout)", api.BaseURL(), c.Duration("timeout"))
	case ae.Status == 0:
		text = fmt.Sprintf("cannot reach router at %s: %v (is `fedrouter run` running? --router)", api.BaseURL(), ae.Err)
	case text == "":
		return err
	case ae.Status == 401:
		text += " (give --config with the router's configuration file, or --token-file, --token; docs/cli.md)"
	case ae.Status == 503 && ae.RetryAfter > 0:
		// A takeover or a store outage: nothing was changed, the same
		// command can be run again.
		text += " (HTTP 503: nothing was changed"
		if !strings.Contains(text, "retry in") {
			text += fmt.Sprintf("; run the command again in %s", ae.RetryAfter)
		}
		text += ")"
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
