package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/routes"
)

// stateCommand edits a stopped router's state file: the saved routes
// that stop its start (check-config names them, with this command).
func stateCommand() *cli.Command {
	return &cli.Command{
		Name:  "state",
		Usage: "the saved routes of a router that is not running",
		Subcommands: []*cli.Command{{
			Name:      "drop",
			Usage:     "drop saved routes by id from the state file (check-config names those the start refuses)",
			ArgsUsage: "<id>...",
			Flags: []cli.Flag{
				configFlag(),
				&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
			},
			Action: dropSaved,
		}},
	}
}

func dropSaved(c *cli.Context) error {
	if c.NArg() == 0 || c.String("config") == "" {
		return cli.Exit("usage: fedrouter state drop --config FILE <id>... (give the configuration and the ids check-config names)", 2)
	}
	cfg, err := config.Load(c.String("config"))
	if err != nil {
		return err
	}
	if cfg.Cluster != nil {
		return errors.New("a cluster member keeps its routes in the store, not in a state file: delete them with fedrouter route del")
	}
	// The router must not run: its state is its own while it does.
	unlock, err := router.LockState(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = unlock() }() // the process's end releases it all the same
	dropped, err := routes.DropSaved(cfg.StatePath(), c.Args().Slice())
	if err != nil {
		return err
	}
	p := newPrinter(c.App.Writer)
	if !c.Bool("quiet") {
		for _, s := range dropped {
			p.printf("dropped saved route %s: %s\n", s.ID(), s)
		}
	}
	return p.done()
}
