package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/api"
)

// qpid-route's link add and link del: a link between two of the router's
// brokers, both ways, that it advertises in its link state and carries
// transit over, until link del or the router stops (docs/cli.md).

func linkAddCommand() *cli.Command {
	cmd := apiCommand("link", "add", "add a link between two of the router's brokers, both ways, advertised in its link state (until link del or a restart)", "<dest> <src>", 2, 2, false, addLink)
	cmd.Flags = append(cmd.Flags, &cli.IntFlag{Name: "cost", Value: 1, Usage: "link cost `N` for the topology"})
	return cmd
}

func addLink(c *cli.Context, client *adminclient.Client) error {
	if c.IsSet("cost") && c.Int("cost") < 1 {
		return usageExit("fedrouter link add: --cost %d: want 1 or more", c.Int("cost"))
	}
	l := api.Link{Dest: c.Args().Get(0), Src: c.Args().Get(1), Cost: c.Int("cost")}
	err := client.AddLink(c.Context, l)
	var ae *adminclient.Error
	if errors.As(err, &ae) && ae.Code == api.CodeDuplicate {
		// As a duplicate route: a warning, and success.
		if !c.Bool("quiet") {
			_, _ = fmt.Fprintf(c.App.ErrWriter, "Duplicate link - ignoring: %s <-> %s\n", l.Dest, l.Src)
		}
		return nil
	}
	if err == nil && c.Bool("verbose") {
		return printDone(c, "added link %s <-> %s (cost %d)\n", l.Dest, l.Src, l.Cost)
	}
	return err
}

func deleteLink(c *cli.Context, client *adminclient.Client) error {
	l := api.Link{Dest: c.Args().Get(0), Src: c.Args().Get(1)}
	err := client.DeleteLink(c.Context, l)
	if err == nil && c.Bool("verbose") {
		return printDone(c, "deleted link %s <-> %s\n", l.Dest, l.Src)
	}
	return err
}
