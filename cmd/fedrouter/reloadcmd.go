package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/api"
)

// reloadCommand is `fedrouter reload`: the running router reads its
// configuration file again (as on SIGHUP) and says what changed.
func reloadCommand() *cli.Command {
	return apiCommand("", "reload", "make the running router read its configuration file again and say what changed (as kill -HUP does)", "", 0, 0, true, reloadConfig)
}

func reloadConfig(c *cli.Context, client *adminclient.Client) error {
	res, err := client.Reload(c.Context)
	var ae *adminclient.Error
	if errors.As(err, &ae) && len(ae.Problems) > 0 {
		// Each problem on its own line, file:line first, as check-config
		// prints them.
		return &shownError{text: ae.Message + ":\n  " + strings.Join(ae.Problems, "\n  "), err: err}
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, res)
	}
	if c.Bool("quiet") {
		return nil
	}
	p := newPrinter(c.App.Writer)
	p.println(reloadSummary(res))
	if n := len(res.RoutesAdded) + len(res.RoutesRemoved) + len(res.RoutesChanged); n > 0 {
		p.table()
		p.println("Change\tID\tRoute")
		for _, l := range []struct {
			what string
			rs   []api.ReloadRoute
		}{{"added", res.RoutesAdded}, {"removed", res.RoutesRemoved}, {"changed", res.RoutesChanged}} {
			for _, r := range l.rs {
				p.printf("%s\t%s\t%s\n", l.what, r.ID, r.Route)
			}
		}
		p.endTable()
	}
	return p.done()
}

// reloadSummary is the answer in one line.
func reloadSummary(res api.Reload) string {
	if !res.Changed {
		return fmt.Sprintf("reloaded %s: nothing changed (%d routes unchanged)", res.File, res.RoutesUnchanged)
	}
	redialed, settings := "none", "none"
	if len(res.BrokersRedialed) > 0 {
		redialed = strings.Join(res.BrokersRedialed, ", ")
	}
	if len(res.Settings) > 0 {
		settings = strings.Join(res.Settings, ", ")
	}
	return fmt.Sprintf("reloaded %s: routes %d added, %d removed, %d changed, %d unchanged; brokers re-dialled: %s; settings: %s",
		res.File, len(res.RoutesAdded), len(res.RoutesRemoved), len(res.RoutesChanged), res.RoutesUnchanged, redialed, settings)
}
