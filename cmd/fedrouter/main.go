// Command fedrouter is the AMQP 1.0 federation router: the daemon (run) and
// its operator commands in one binary.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/router"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Durations in log lines read as a person writes them ("1.2s", "250ms"):
// zerolog's default is a float of milliseconds under a name that does not
// say so. Set once, before any logger exists.
func init() { zerolog.DurationFieldFormat = zerolog.DurationFormatString }

func main() {
	os.Exit(runMain(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// runMain runs the command line args and returns the exit status
// (docs/cli.md): 0 done, 1 refused or failed, 2 usage or a bad
// configuration. Errors are one line on stderr (a configuration's
// problems one each).
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp()
	app.Writer, app.ErrWriter = stdout, stderr
	app.ExitErrHandler = func(*cli.Context, error) {} // the status is decided here
	err := app.RunContext(ctx, args)
	if err == nil {
		return 0
	}
	// Nothing is left to tell if stderr itself fails: the status says it.
	var ec cli.ExitCoder
	var ce *config.Error
	switch {
	case errors.As(err, &ec):
		_, _ = fmt.Fprintln(stderr, err)
		return ec.ExitCode()
	case errors.As(err, &ce):
		_, _ = fmt.Fprintln(stderr, "fedrouter:", err)
		return 2
	}
	_, _ = fmt.Fprintln(stderr, "fedrouter:", plainText(err.Error()))
	return 1
}

func newApp() *cli.App {
	// --version only: -v is every command's --verbose.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version"}
	cli.VersionPrinter = func(c *cli.Context) { _ = printVersion(c) } // as `fedrouter version`
	app := &cli.App{
		Name:    "fedrouter",
		Usage:   "AMQP 1.0 federation router",
		Version: version,
		// Given here: with a help command of its own, urfave/cli adds no
		// --help to the app.
		Flags: []cli.Flag{cli.HelpFlag},
		Commands: append([]*cli.Command{
			{
				Name:  "run",
				Usage: "run the router daemon",
				Flags: []cli.Flag{
					configFlag(),
					&cli.DurationFlag{Name: "status-every", Usage: "print the broker connection table this often (0: never)"},
				},
				Action: runDaemon,
			},
			{
				Name:      "check-config",
				Usage:     "refuse what run would refuse of a configuration, without starting",
				ArgsUsage: "[FILE]",
				Flags:     []cli.Flag{configFlag()},
				Action:    checkConfig,
			},
			{
				Name:   "profiles",
				Usage:  "list the broker profiles",
				Action: listProfiles,
			},
			stateCommand(),
			{
				Name:      "help",
				Aliases:   []string{"h"},
				Usage:     "show the help of a command, at any depth: fedrouter help route list",
				ArgsUsage: "[command...]",
				Action:    showHelp,
			},
			{
				Name:   "version",
				Usage:  "print fedrouter's version",
				Action: printVersion,
			},
		}, append(apiCommands(), reloadCommand())...),
	}
	strictUsage(app)
	return app
}

// checkConfig judges a configuration as run would (router.LoadConfig):
// every problem at once, exit status 2; else "ok", with what this user
// could not read noted.
func checkConfig(c *cli.Context) error {
	path := c.String("config")
	switch {
	case c.NArg() > 1:
		return usageExit("usage: fedrouter check-config [--config] FILE (got %d arguments)", c.NArg())
	case c.NArg() == 1:
		path = c.Args().First() // the file as its argument, as before --config
	case path == "":
		return usageExit("usage: fedrouter check-config [--config] FILE (or $FEDROUTER_CONFIG): no configuration given")
	}
	cfg, notes, err := router.LoadConfig(path, config.ModeCheck)
	if err != nil {
		return err
	}
	p := newPrinter(c.App.Writer)
	p.printf("%s: ok (router %s, %d brokers)\n", path, cfg.RouterID, len(cfg.Brokers))
	for _, n := range notes {
		p.printf("  %s\n", n)
	}
	return p.done()
}

// showHelp shows the help of the command its arguments name, however
// deep (urfave/cli's own help command shows the first one's only): it is
// the command's --help.
func showHelp(c *cli.Context) error {
	app := newApp()
	app.Writer, app.ErrWriter, app.ExitErrHandler = c.App.Writer, c.App.ErrWriter, c.App.ExitErrHandler
	return app.RunContext(c.Context, append(append([]string{c.App.Name}, c.Args().Slice()...), "--help"))
}

// printVersion prints the version set at build time and the Go that
// built it.
func printVersion(c *cli.Context) error {
	if err := noArgs(c, "version"); err != nil {
		return err
	}
	p := newPrinter(c.App.Writer)
	p.printf("fedrouter %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return p.done()
}

func listProfiles(c *cli.Context) error {
	if err := noArgs(c, "profiles"); err != nil {
		return err
	}
	p := newPrinter(c.App.Writer)
	p.table()
	p.println("Profile\tTested\tGlobal destinations\tDestination limits")
	for _, n := range amqp.ProfileNames() {
		tested, _ := amqp.LookupProfile(n)
		note := "yes"
		if !tested {
			note = "no (from the broker's documentation)"
		}
		p.printf("%s\t%s\t%s\t%s\n", n, note, amqp.DestinationSupport(n), amqp.LimitSupport(n))
	}
	return p.done()
}

// newLogger builds the daemon's logger. Its level is zerolog's global
// one, so that a reload can change it for every logger derived from this
// one (liveSettings.SetLogLevel); the logger's own lets everything through.
func newLogger(spec config.LogSpec, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(spec.Level)
	if err != nil {
		level = zerolog.InfoLevel
	}
	zerolog.SetGlobalLevel(level)
	if spec.Format == "text" {
		f, isFile := w.(*os.File)
		color := isFile && isatty.IsTerminal(f.Fd())
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !color}
	}
	return zerolog.New(w).Level(zerolog.TraceLevel).With().Timestamp().Logger()
}

// liveSettings is what a reload changes outside the router: the admin
// API's token (nil with the API off) and the log level.
type liveSettings struct{ admin *router.AdminServer }

func (l liveSettings) SetAdminToken(token string) error {
	if l.admin == nil {
		return nil
	}
	return l.admin.SetAdminToken(token)
}

func (l liveSettings) SetLogLevel(level string) error {
	lv, err := zerolog.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("log.level %q: %w", level, err)
	}
	zerolog.SetGlobalLevel(lv)
	return nil
}

// configFlag is how every command is given the router's configuration:
// --config FILE, -c FILE, or $FEDROUTER_CONFIG.
func configFlag() cli.Flag {
	return &cli.StringFlag{Name: "config", Aliases: []string{"c"}, EnvVars: []string{"FEDROUTER_CONFIG"}, Usage: "the router's configuration `FILE` (YAML)"}
}

func runDaemon(c *cli.Context) error {
	if err := noArgs(c, "run"); err != nil {
		return err
	}
	if c.String("config") == "" {
		return usageExit("usage: fedrouter run --config FILE (or $FEDROUTER_CONFIG): no configuration given")
	}
	// Everything check-config refuses, before anything is read or
	// written: the same function, the same words.
	cfg, _, err := router.LoadConfig(c.String("config"), config.ModeRun)
	if err != nil {
		return err
	}
	// Before the state directory is read or written: one router per state.
	unlock, err := router.LockState(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = unlock() }() // the process's end releases it all the same
	log := newLogger(cfg.Log, c.App.ErrWriter)
	r := router.New(cfg, log)
	// Before the router connects: a token problem stops the start at once.
	admin, err := newAdmin(c.Context, cfg, r, log)
	if err != nil {
		return err
	}
	r.EnableReload(liveSettings{admin: admin})
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the configuration file (before it was caught it
	// killed the router without a word). Caught from here on: a HUP
	// during the start is queued and reloads once the router runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// The app's root context, not the signal one: a signal makes this
	// loop call r.Stop, which shuts the router down in order.
	if err := r.Start(c.Context); err != nil {
		return err
	}
	if admin != nil {
		if err := admin.Start(); err != nil {
			r.Stop()
			return err
		}
	}
	log.Info().Str("router", cfg.RouterID).Int("brokers", len(cfg.Brokers)).Int("routes", len(cfg.Routes)).
		Str("admin", adminAddr(admin)).Str("admin_scheme", adminScheme(admin)).Str("version", version).Msg("fedrouter started")
	var tick <-chan time.Time
	if every := c.Duration("status-every"); every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			if err := printStatus(c.App.Writer, r.Status()); err != nil {
				log.Warn().Err(err).Msg("status table") // the router carries on
			}
		case <-hup:
			// The router logs the summary, or the refusal with its
			// problems; the running configuration goes on either way.
			if _, err := r.Reload(ctx); errors.Is(err, router.ErrReloadBusy) {
				log.Warn().Msg("SIGHUP: a reload is in progress already (through the admin API): this one is not made")
			}
		case <-ctx.Done():
			log.Info().Msg("stopping")
			if admin != nil {
				// Without the app's cancel: the server gets its 5 s even
				// when the app's context has ended.
				sctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context), 5*time.Second)
				_ = admin.Close(sctx)
				cancel()
			}
			r.Stop()
			return printStatus(c.App.Writer, r.Status())
		}
	}
}

// newAdmin builds the admin API, unless admin.listen is "" or "off",
// with its token: the configured one, or the one generated beside the
// state file (made on the first start; its path is logged, the token
// never). Its requests' contexts derive from ctx. Start it after r.
func newAdmin(ctx context.Context, cfg *config.Config, r *router.Router, log zerolog.Logger) (*router.AdminServer, error) {
	if cfg.AdminOff() {
		return nil, nil
	}
	token, path, created, err := router.AdminToken(cfg)
	if err != nil {
		return nil, err
	}
	switch {
	case created:
		log.Info().Str("token_file", path).Msg("admin API token generated (mode 0600): the CLI reads it with --config")
	case path != "":
		log.Info().Str("token_file", path).Msg("admin API token: the one generated at an earlier start")
	}
	a := cfg.Admin
	series := cfg.Metrics.RouteSeries
	if series == 0 {
		series = -1 // route_series: 0 is none; the option's zero is the default
	}
	socket, ok := cfg.AdminSocketPath()
	if !ok {
		socket = "" // a cluster member, or a state directory too deep for a socket: the CLI uses the token
	}
	return router.NewAdminServer(r, router.AdminOptions{Listen: a.Listen, Token: token, Names: a.Names,
		CertFile: a.TLS.CertFile, KeyFile: a.TLS.KeyFile, AllowPlaintext: a.AllowPlaintext, Log: log, Context: ctx,
		RouteSeries: series, Socket: socket}), nil
}

func adminAddr(s *router.AdminServer) string {
	if s == nil {
		return "off"
	}
	return s.Addr()
}

func adminScheme(s *router.AdminServer) string {
	if s == nil {
		return ""
	}
	return s.Scheme()
}

// printStatus prints the connection table the way qpid-route's link list
// does, as `broker list` prints it.
func printStatus(out io.Writer, sts []amqp.Status) error {
	now := time.Now()
	return printBrokers(out, router.BrokerStatuses(sts, now), now)
}
