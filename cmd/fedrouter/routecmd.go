package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/routes"
)

// apiCommands are the qpid-route style verbs that talk to a running router
// through its admin API (docs/cli.md).
func apiCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:  "queue",
			Usage: "add or delete queue routes (source queue to destination exchange)",
			Subcommands: []*cli.Command{
				addCommand(routes.KindQueue),
				delCommand(routes.KindQueue),
			},
		},
		{
			Name:  "route",
			Usage: "add, delete, list and map exchange routes",
			Subcommands: []*cli.Command{
				addCommand(routes.KindExchange),
				delCommand(routes.KindExchange),
				apiCommand("route", "list", "list the routes (all kinds), optionally only those to one destination broker", "[<dest>]", 0, 1, true, listRoutes),
				apiCommand("route", "flush", "delete every runtime route (to one destination broker, if given); configured routes stay", "[<dest>]", 0, 1, false, flushRoutes),
				apiCommand("route", "map", "show the routes between brokers (only those to or from one broker, if given), as qpid-route's route map does", "[<broker>]", 0, 1, true, mapRoutes),
			},
		},
		{
			Name:  "link",
			Usage: "links between brokers, the pairs routes run over: list, add, del",
			Subcommands: []*cli.Command{
				apiCommand("link", "list", "list the links", "", 0, 0, true, listLinks),
				linkAddCommand(),
				apiCommand("link", "del", "delete a link that link add added", "<dest> <src>", 2, 2, false, deleteLink),
			},
		},
		{
			Name:  "dynamic",
			Usage: "add or delete dynamic routes (the destination's bindings decide what crosses)",
			Subcommands: []*cli.Command{
				addCommand(routes.KindDynamic),
				delCommand(routes.KindDynamic),
			},
		},
		topologyCommand(),
		clusterCommand(),
		destinationCommand(),
		{
			Name:  "broker",
			Usage: "show broker connections",
			Subcommands: []*cli.Command{
				apiCommand("broker", "list", "list the broker connections", "", 0, 0, true, listBrokers),
			},
		},
	}
}

// apiCommand builds a leaf command with the client flags (and --json for
// listings) whose action gets a ready client and checked arguments.
func apiCommand(parent, name, usage, argsUsage string, minArgs, maxArgs int, listing bool, run func(*cli.Context, *adminclient.Client) error) *cli.Command {
	path := strings.TrimSpace(parent + " " + name) // urfave/cli v2 does not give a subcommand its full name
	flags := clientFlags()
	if listing {
		flags = append(flags, &cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"})
	}
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: argsUsage,
		Flags:     flags,
		Action: func(c *cli.Context) error {
			if err := checkArgs(c, path, minArgs, maxArgs); err != nil {
				return err
			}
			if c.Bool("quiet") {
				if c.Bool("verbose") {
					return usageExit("fedrouter %s: -q and -v together: give one", path)
				}
				// Nothing but errors, whatever the command prints: its
				// status says the rest (a listing with -q is a probe).
				c.App.Writer = io.Discard
			}
			client, err := newAPIClient(c)
			if err != nil {
				return cli.Exit("fedrouter: "+err.Error(), 2)
			}
			defer client.Close()
			return cliError(c, client, run(c, client))
		},
	}
}

// checkArgs enforces the argument count with qpid-route's kind of usage
// line. urfave/cli stops reading flags at the first argument, so a flag
// after the arguments shows up as an extra argument: say so.
func checkArgs(c *cli.Context, path string, min, max int) error {
	n := c.NArg()
	if n >= min && n <= max {
		return nil
	}
	usage := strings.TrimSpace("fedrouter " + path + " [options] " + c.Command.ArgsUsage)
	msg := fmt.Sprintf("usage: %s (got %d argument%s)", usage, n, plural(n))
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			msg += fmt.Sprintf("; options go before the arguments, found %q after them", a)
			break
		}
	}
	return cli.Exit(msg, 2)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// parentOf is the command a route kind's add and del sit under.
func parentOf(kind routes.Kind) string {
	switch kind {
	case routes.KindQueue:
		return "queue"
	case routes.KindDynamic:
		return "dynamic"
	}
	return "route"
}

// lastArg is the fourth argument's name: the source queue or binding key;
// a dynamic route has none.
func lastArg(kind routes.Kind) string {
	switch kind {
	case routes.KindQueue:
		return " <queue>"
	case routes.KindDynamic:
		return ""
	}
	return " <key>"
}

// nArgs is how many arguments add and del take.
func nArgs(kind routes.Kind) int {
	if kind == routes.KindDynamic {
		return 3
	}
	return 4
}

func addCommand(kind routes.Kind) *cli.Command {
	add := func(c *cli.Context, client *adminclient.Client) error { return addRoute(c, client, kind) }
	cmd := apiCommand(parentOf(kind), "add", "add a route", "<dest> <src> <exchange>"+lastArg(kind), nArgs(kind), nArgs(kind), false, add)
	cmd.Usage = map[routes.Kind]string{
		routes.KindQueue:    "add a route from queue <queue> on <src> to exchange <exchange> on <dest>",
		routes.KindExchange: "add a route from exchange <exchange> on <src>, bound with <key>, to the same exchange on <dest>",
		routes.KindDynamic:  "add a dynamic route: what <exchange> on <src> routes to the bindings of <exchange> on <dest>",
	}[kind]
	cmd.Flags = append(cmd.Flags,
		&cli.BoolFlag{Name: "durable", Aliases: []string{"d"}, Usage: "keep the route across router restarts (state file)"},
		&cli.IntFlag{Name: "ack", Usage: "qpid-route's batch acknowledgement `N`: settle the source after at most N messages (or 5 ms, whichever first)"},
		&cli.IntFlag{Name: "credit", Value: routes.DefaultCredit, Usage: fmt.Sprintf("messages in flight at most, `N` (1..%d)", routes.MaxCredit)},
		&cli.BoolFlag{Name: "src-local", Aliases: []string{"s"}, Usage: "push route: the router local to the source owns it"},
		&cli.IntFlag{Name: "cost", Value: routes.DefaultCost, Usage: "link cost `N` for the topology"},
		&cli.StringFlag{Name: "on-reject", Value: string(routes.RejectAtSource), Usage: "`POLICY` for a message the destination refuses: reject | dead-letter"},
		&cli.StringFlag{Name: "dead-letter-queue", Usage: "`QUEUE` on the source broker for --on-reject dead-letter"},
		&cli.DurationFlag{Name: "outcome-timeout", Value: routes.DefaultOutcomeTimeout, Usage: "wait at most `D` for the destination's outcome"},
		&cli.StringSliceFlag{Name: "no-path", Usage: "corrective `STEPS` while the destination cannot be reached, comma-separated: \"hold 10m,dead-letter\" (default: the router's no_path)"},
		&cli.BoolFlag{Name: "force", Usage: "add a multi-hop route towards a broker no router has advertised yet (it waits for one)"},
	)
	switch kind {
	case routes.KindExchange:
		cmd.Flags = append(cmd.Flags, &cli.StringFlag{Name: "dest-exchange", Usage: "deliver to exchange `X` on <dest> instead of <exchange>"})
	case routes.KindDynamic:
		cmd.Flags = append(cmd.Flags, &cli.BoolFlag{Name: "divert-bindings", Usage: "count exchange-to-exchange bindings at <dest> as demand (enableDivertBindings)"})
	}
	return cmd
}

func delCommand(kind routes.Kind) *cli.Command {
	del := func(c *cli.Context, client *adminclient.Client) error { return deleteRoute(c, client, kind) }
	cmd := apiCommand(parentOf(kind), "del", "delete a route, named as it was added or by its id (route list)", "<dest> <src> <exchange>"+lastArg(kind)+" | <id>", 1, nArgs(kind), false, del)
	return cmd
}

// routeID is a route's id as route list shows it: 12 hexadecimal digits.
var routeID = regexp.MustCompile(`^[0-9a-f]{12}$`)

// specFromArgs is the route the four arguments name.
func specFromArgs(c *cli.Context, kind routes.Kind) routes.Spec {
	a := c.Args()
	spec := routes.Spec{Kind: kind, Dest: a.Get(0), Src: a.Get(1), Exchange: a.Get(2)}
	switch kind {
	case routes.KindQueue:
		spec.Queue = a.Get(3)
	case routes.KindExchange:
		spec.Key = a.Get(3)
	}
	return spec
}

// refuseReplaced refuses the option values the route would silently
// replace by its defaults (a zero credit, cost or outcome timeout means
// "the default" in a route spec): given on the command line, they are
// mistakes, not requests for the default.
func refuseReplaced(c *cli.Context, path string) error {
	switch {
	case c.IsSet("credit") && c.Int("credit") < 1:
		return usageExit("fedrouter %s: --credit %d: want 1..%d (messages in flight)", path, c.Int("credit"), routes.MaxCredit)
	case c.IsSet("cost") && c.Int("cost") < 1:
		return usageExit("fedrouter %s: --cost %d: want 1 or more", path, c.Int("cost"))
	case c.IsSet("outcome-timeout") && c.Duration("outcome-timeout") <= 0:
		return usageExit("fedrouter %s: --outcome-timeout %s: want a positive duration (e.g. 30s)", path, c.Duration("outcome-timeout"))
	}
	return nil
}

func addRoute(c *cli.Context, client *adminclient.Client, kind routes.Kind) error {
	if err := refuseReplaced(c, parentOf(kind)+" add"); err != nil {
		return err
	}
	spec := specFromArgs(c, kind)
	spec.Durable = c.Bool("durable")
	spec.Ack = c.Int("ack")
	spec.Credit = c.Int("credit")
	spec.Push = c.Bool("src-local")
	spec.Cost = c.Int("cost")
	spec.OnReject = routes.RejectPolicy(c.String("on-reject"))
	spec.DeadLetterQueue = c.String("dead-letter-queue")
	spec.OutcomeTimeout = c.Duration("outcome-timeout")
	spec.Force = c.Bool("force")
	for _, step := range c.StringSlice("no-path") {
		spec.NoPath = append(spec.NoPath, strings.TrimSpace(step))
	}
	switch spec.Kind {
	case routes.KindExchange:
		spec.DestExchange = c.String("dest-exchange")
	case routes.KindDynamic:
		spec.DivertBindings = c.Bool("divert-bindings")
	}
	st, err := client.AddRoute(c.Context, spec)
	var ae *adminclient.Error
	if errors.As(err, &ae) && ae.Code == api.CodeDuplicate {
		// qpid-route's behaviour: a warning, and success, so scripts that
		// add their routes on every start keep working.
		if !c.Bool("quiet") {
			// A warning only: the add succeeded, and stderr is where
			// any error about it would go.
			_, _ = fmt.Fprintf(c.App.ErrWriter, "%s: %s\n", routes.ErrDuplicate, spec)
		}
		return nil
	}
	if err != nil {
		return err
	}
	p := newPrinter(c.App.Writer)
	if c.Bool("verbose") {
		p.printf("added route %s: %s (%s)\n", st.ID, st.Spec, st.State)
	}
	return p.done()
}

// deleteRoute deletes the route the arguments name: as it was added, or
// by its id alone. A route that is not there is named as the user typed
// it, never by an id they did not give.
func deleteRoute(c *cli.Context, client *adminclient.Client, kind routes.Kind) error {
	path := parentOf(kind) + " del"
	if c.NArg() == 1 {
		id := c.Args().First()
		if !routeID.MatchString(id) {
			return usageExit("usage: fedrouter %s [options] %s (%q is not a route id: 12 hexadecimal digits, as route list shows)", path, c.Command.ArgsUsage, id)
		}
		err := client.DeleteRouteID(c.Context, id)
		if notFound(err) {
			return &shownError{text: fmt.Sprintf("no such route: id %s (route list shows the routes and their ids)", id), err: err}
		}
		if err == nil && c.Bool("verbose") {
			return printDone(c, "deleted route %s\n", id)
		}
		return err
	}
	if c.NArg() != nArgs(kind) {
		return checkArgs(c, path, nArgs(kind), nArgs(kind))
	}
	spec := specFromArgs(c, kind)
	err := client.DeleteRoute(c.Context, spec)
	if notFound(err) {
		return &shownError{text: "no such route: " + spec.String() + " (route list shows the routes)", err: err}
	}
	if err == nil && c.Bool("verbose") {
		return printDone(c, "deleted route %s: %s\n", spec.ID(), spec)
	}
	return err
}

// notFound says whether the router answered that the route is not there.
func notFound(err error) bool {
	var ae *adminclient.Error
	return errors.As(err, &ae) && ae.Code == api.CodeNotFound
}

// printDone prints one line on the command's output.
func printDone(c *cli.Context, format string, args ...any) error {
	p := newPrinter(c.App.Writer)
	p.printf(format, args...)
	return p.done()
}

func flushRoutes(c *cli.Context, client *adminclient.Client) error {
	n, err := client.FlushRoutes(c.Context, c.Args().First())
	if err != nil {
		return err
	}
	p := newPrinter(c.App.Writer)
	if !c.Bool("quiet") {
		p.printf("%d route%s deleted\n", n, plural(n))
	}
	return p.done()
}

// fetchRoutes gets the routes; with broker (as the user typed it: a
// name or [user/pass@]host[:port]) only those keep(spec, name) keeps.
// partial is the router's word that the list is not the whole one.
func fetchRoutes(c *cli.Context, client *adminclient.Client, broker string, keep func(routes.Spec, string) bool) (sts []routes.Status, partial string, err error) {
	sts, partial, err = client.RoutesPartial(c.Context)
	if err != nil || broker == "" {
		return sts, partial, err
	}
	name, err := resolveBroker(c, client, broker, sts)
	if err != nil {
		return nil, "", err
	}
	kept := sts[:0]
	for _, st := range sts {
		if keep(st.Spec, name) {
			kept = append(kept, st)
		}
	}
	return kept, partial, nil
}

// partialError is a listing's status when the router said its list is
// partial: what could be listed was printed, and the command fails,
// saying why, so that no one (nor a script) reads it as the whole.
func partialError(partial string, printed error) error {
	if printed != nil || partial == "" {
		return printed
	}
	return &shownError{text: "route list: " + partial, err: errPartial}
}

// errPartial: the router listed some of its routes only.
var errPartial = errors.New("partial route list")

// resolveBroker is the broker s names, as the router resolves a route's:
// one of its brokers by name or by host:port, or a broker its routes
// lead to (a remote destination). Anything else is refused, naming
// what was typed: an empty listing would say "no routes" instead.
func resolveBroker(c *cli.Context, client *adminclient.Client, s string, sts []routes.Status) (string, error) {
	bs, err := client.Brokers(c.Context)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.Broker == s {
			return s, nil
		}
		names = append(names, b.Broker)
	}
	for _, st := range sts {
		if st.Spec.Dest == s {
			return s, nil
		}
	}
	host, port := routes.Endpoint(s)
	for _, b := range bs {
		if routes.SameEndpoint(b.URL, host, port) {
			return b.Broker, nil
		}
	}
	sort.Strings(names)
	return "", &shownError{text: fmt.Sprintf("unknown broker %q: not a broker name or host:port of this router, nor a destination of its routes (brokers: %s)",
		amqp.Redact(s), strings.Join(names, ", ")), err: errUnknownBroker}
}

// errUnknownBroker: a broker argument names none of the router's.
var errUnknownBroker = errors.New("unknown broker")

func toDest(s routes.Spec, name string) bool { return s.Dest == name }

func toOrFrom(s routes.Spec, name string) bool { return s.Dest == name || s.Src == name }

func listRoutes(c *cli.Context, client *adminclient.Client) error {
	sts, partial, err := fetchRoutes(c, client, c.Args().First(), toDest)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return partialError(partial, printJSON(c.App.Writer, sts))
	}
	return partialError(partial, printRoutes(c.App.Writer, sts))
}

// printRoutes prints qpid-route's route list columns plus the state and
// counters a route has here.
func printRoutes(out io.Writer, sts []routes.Status) error {
	p := newPrinter(out)
	p.table()
	p.println("ID\tDest\tSrc\tExchange\tQueue/Key\tDurable\tOrigin\tState\tForwarded\tIn flight\tDetail\tLast Error")
	for _, st := range sts {
		s := st.Spec
		ex, last := s.Exchange, s.Queue
		switch s.Kind {
		case routes.KindExchange:
			last = s.Key
			if s.DestExchange != "" {
				ex += " => " + s.DestExchange
			}
		case routes.KindDynamic:
			last = "(dynamic)"
		}
		p.printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n",
			st.ID, s.Dest, s.Src, ex, last, yesNo(s.Durable), orDash(string(st.Origin)), st.State, st.Forwarded, st.InFlight, orDash(routeDetail(st)), lastErrorCell(st))
	}
	return p.done()
}

// lastErrorCell is a route's last error as route list shows it: marked
// as past, with its time, once the route is Operational again — an
// operator must not read a healed route as failing.
func lastErrorCell(st routes.Status) string {
	if st.LastError == "" {
		return "-"
	}
	if st.State != routes.StateOperational {
		return st.LastError
	}
	if st.LastErrorAt.IsZero() {
		return "past: " + st.LastError
	}
	return "past (" + st.LastErrorAt.Local().Format(time.Stamp) + "): " + st.LastError
}

// routeDetail is what a route is doing beyond its state: its path when it
// crosses several brokers or reroutes, what it waits for, and the
// corrective actions it took.
func routeDetail(st routes.Status) string {
	parts := []string{}
	if st.Detail != "" {
		parts = append(parts, st.Detail)
	}
	if len(st.Spec.NoPath) > 0 {
		parts = append(parts, "no path: "+strings.Join(st.Spec.NoPath, ", "))
	}
	if st.Rerouted > 0 {
		parts = append(parts, fmt.Sprintf("%d rerouted", st.Rerouted))
	}
	if st.NoPath > 0 {
		parts = append(parts, fmt.Sprintf("%d without a path", st.NoPath))
	}
	if st.Copies > 0 {
		parts = append(parts, fmt.Sprintf("%d copies", st.Copies))
	}
	if st.Looped > 0 {
		parts = append(parts, fmt.Sprintf("%d looped", st.Looped))
	}
	return strings.Join(parts, "; ")
}

// mapLine is one line of the route map: a route, or two routes between
// the same brokers in opposite directions for the same exchange and key.
// `route map --json` prints them, every field in every line (docs/cli.md).
type mapLine struct {
	Line          string   `json:"line"`
	Dest          string   `json:"dest"`
	Src           string   `json:"src"`
	Bidirectional bool     `json:"bidirectional"`
	Dynamic       bool     `json:"dynamic"`
	Exchange      string   `json:"exchange"` // the source exchange; dynamic routes are grouped under it
	Routes        []string `json:"routes"`   // route IDs
}

func mapRoutes(c *cli.Context, client *adminclient.Client) error {
	sts, partial, err := fetchRoutes(c, client, c.Args().First(), toOrFrom)
	if err != nil {
		return err
	}
	lines := routeMap(sts)
	if c.Bool("json") {
		return partialError(partial, printJSON(c.App.Writer, lines))
	}
	p := newPrinter(c.App.Writer)
	printDynamicMap(p, lines)
	p.println("Static Routes:")
	static := 0
	for _, l := range lines {
		if !l.Dynamic {
			p.println("  " + l.Line)
			static++
		}
	}
	if static == 0 {
		p.println("  none found")
	}
	if err := printMapNextHops(c, client, p); err != nil {
		return err
	}
	return partialError(partial, p.done())
}

// routeMap renders the routes as qpid-route's map does, merging each pair
// of exchange routes that mirror each other into one "A <=> B" line.
func routeMap(sts []routes.Status) []mapLine {
	sorted := append([]routes.Status(nil), sts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Spec.String() < sorted[j].Spec.String() })
	used := make([]bool, len(sorted))
	lines := []mapLine{}
	for i, st := range sorted {
		if used[i] {
			continue
		}
		used[i] = true
		l := mapLine{Line: st.Spec.String(), Dest: st.Spec.Dest, Src: st.Spec.Src, Exchange: st.Spec.Exchange, Routes: []string{st.ID}}
		if st.Spec.Kind == routes.KindDynamic {
			l.Line, l.Dynamic = st.Spec.Dest+" <= "+st.Spec.Src, true
		}
		for j := i + 1; j < len(sorted); j++ {
			if !used[j] && mirrors(st.Spec, sorted[j].Spec) {
				used[j] = true
				l.Bidirectional = true
				l.Routes = append(l.Routes, sorted[j].ID)
				l.Line = strings.Replace(l.Line, " <= ", " <=> ", 1)
				break
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// printDynamicMap prints the dynamic routes grouped per exchange, as
// qpid-route's route map does.
func printDynamicMap(p *printer, lines []mapLine) {
	byExchange := map[string][]string{}
	var exchanges []string
	for _, l := range lines {
		if !l.Dynamic {
			continue
		}
		if _, ok := byExchange[l.Exchange]; !ok {
			exchanges = append(exchanges, l.Exchange)
		}
		byExchange[l.Exchange] = append(byExchange[l.Exchange], l.Line)
	}
	if len(exchanges) == 0 {
		return
	}
	sort.Strings(exchanges)
	p.println("Dynamic Routes:")
	for _, ex := range exchanges {
		p.printf("\n  Exchange %s:\n", ex)
		for _, l := range byExchange[ex] {
			p.println("    " + l)
		}
	}
	p.println("")
}

// mirrors reports whether b carries the same exchange and key as a in the
// opposite direction.
func mirrors(a, b routes.Spec) bool {
	if a.Kind == routes.KindDynamic && b.Kind == routes.KindDynamic {
		return a.Dest == b.Src && a.Src == b.Dest && a.Exchange == b.Exchange
	}
	return a.Kind == routes.KindExchange && b.Kind == routes.KindExchange &&
		a.Dest == b.Src && a.Src == b.Dest && a.Key == b.Key &&
		a.Exchange == b.DestNode() && a.DestNode() == b.Exchange
}

func listLinks(c *cli.Context, client *adminclient.Client) error {
	links, err := client.Links(c.Context)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, links)
	}
	p := newPrinter(c.App.Writer)
	p.table()
	p.println("Src\tDest\tState\tRoutes\tTransit\tLast Error")
	for _, l := range links {
		dest := l.Dest
		switch {
		case l.Ingress:
			dest = "(ingress)"
		case len(l.Via) > 0:
			dest += " via " + strings.Join(l.Via, ",")
		}
		p.printf("%s\t%s\t%s\t%d\t%s\t%s\n", l.Src, dest, l.State, l.Routes, transitSummary(l.Transit), orDash(l.LastError))
	}
	return p.done()
}

// transitSummary says which transit queues a link carries and how much
// crossed: "for rabbit3,rabbit4: 1200 fwd" ("-" when none).
func transitSummary(ts []routes.TransitStatus) string {
	if len(ts) == 0 {
		return "-"
	}
	var dests []string
	var fwd, dl uint64
	for _, t := range ts {
		if t.Dest != "" {
			dests = append(dests, t.Dest)
		}
		fwd += t.Forwarded
		dl += t.DeadLettered
	}
	out := fmt.Sprintf("%d fwd", fwd)
	if len(dests) > 0 {
		out = "for " + strings.Join(dests, ",") + ": " + out
	}
	if dl > 0 {
		out += fmt.Sprintf(", %d dead-lettered", dl)
	}
	return out
}

func listBrokers(c *cli.Context, client *adminclient.Client) error {
	bs, err := client.Brokers(c.Context)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, bs)
	}
	return printBrokers(c.App.Writer, bs, time.Now())
}

// printBrokers prints the connection table at now: a Waiting
// connection's attempts and the seconds left until the next one (from the
// time the router gave for it), and since when each is in its state.
func printBrokers(out io.Writer, bs []api.BrokerStatus, now time.Time) error {
	p := newPrinter(out)
	p.table()
	p.println("Broker\tURL\tState\tSince\tLast Error")
	for _, b := range bs {
		p.printf("%s\t%s\t%s\t%s\t%s\n", b.Broker, orDash(b.URL), brokerState(b, now), ago(b.Since, now), orDash(b.LastError))
	}
	return p.done()
}

// brokerState is the State cell: a Waiting connection with its attempts
// and the seconds left until the next, counted down to the time the
// router gave (an older router gives the delay only).
func brokerState(b api.BrokerStatus, now time.Time) string {
	switch {
	case !b.RetryAt.IsZero():
		if left := b.RetryLeft(now); left > 0 {
			return fmt.Sprintf("%s (attempt %d, retry in %s)", b.State, b.Attempt, left)
		}
		return fmt.Sprintf("%s (attempt %d, retrying now)", b.State, b.Attempt)
	case b.RetryIn != "":
		return fmt.Sprintf("%s (attempt %d, retry in %s)", b.State, b.Attempt, b.RetryIn)
	}
	return b.State
}

// ago is a past time as its age in whole seconds: "3m12s ago" ("-" for
// none).
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t).Round(time.Second), 0)
	return d.String() + " ago"
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
