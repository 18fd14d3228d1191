package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// The command line's usage errors, the same for every command
// (docs/cli.md): one line on stderr naming the problem — never the whole
// help — and exit status 2. urfave/cli would print the help and exit 1
// on an unknown option, and "No help topic" with status 3 on an unknown
// command.

// usageExit is a usage error: its one line, status 2.
func usageExit(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), 2)
}

// strictUsage gives app and every command under it the one-line usage
// errors: an unknown option, an unknown command, a command group without
// its command.
func strictUsage(app *cli.App) {
	app.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return usageExit("fedrouter: %s (see fedrouter --help)", optionText(err))
	}
	app.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageExit("fedrouter: unknown command %q (fedrouter --help lists them)", c.Args().First())
		}
		return cli.ShowAppHelp(c)
	}
	for _, cmd := range app.Commands {
		strictCommand(cmd, cmd.Name)
	}
}

// strictCommand does strictUsage's work for cmd, whose full name is path.
func strictCommand(cmd *cli.Command, path string) {
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usageExit("fedrouter %s: %s (see fedrouter %s --help)", path, optionText(err), path)
		}
	}
	if len(cmd.Subcommands) == 0 {
		return
	}
	names := make([]string, 0, len(cmd.Subcommands))
	for _, sub := range cmd.Subcommands {
		names = append(names, sub.Name)
		strictCommand(sub, path+" "+sub.Name)
	}
	cmd.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageExit("fedrouter %s: unknown command %q (commands: %s)", path, c.Args().First(), strings.Join(names, ", "))
		}
		return usageExit("usage: fedrouter %s <%s> [options] ... (see fedrouter %s --help)", path, strings.Join(names, "|"), path)
	}
}

// noArgs refuses arguments to a command that takes none.
func noArgs(c *cli.Context, path string) error {
	if n := c.NArg(); n > 0 {
		return usageExit("usage: fedrouter %s [options] (got %d argument%s: %q)", path, n, plural(n), c.Args().First())
	}
	return nil
}

// The Go flag package's words for a bad option, and an option as typed.
var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -+(\S+)$`)
	flagBadValue  = regexp.MustCompile(`^invalid value ("[^"]*") for flag -+(\S+): .*$`)
)

// optionText words an option error as the user typed the option: two
// dashes for a long name, one for a letter.
func optionText(err error) string {
	s := err.Error()
	if m := flagUndefined.FindStringSubmatch(s); m != nil {
		return "unknown option " + dashed(m[1])
	}
	if m := flagBadValue.FindStringSubmatch(s); m != nil {
		return "invalid value " + m[1] + " for " + dashed(m[2])
	}
	return s
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// packagePrefix is a Go package's name heading an error ("routes: "):
// the layer that said it, which an operator has no use for.
var packagePrefix = regexp.MustCompile(`^(?:(?:routes|router|config|store|pgstore|amqp|cluster|adminclient|ownfile): )+`)

// plainText is an error's text for an operator: without the package
// names that head it.
func plainText(s string) string { return packagePrefix.ReplaceAllString(s, "") }
