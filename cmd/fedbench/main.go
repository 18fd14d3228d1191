// Command fedbench measures fedrouter against its baselines on the brokers
// of testdata/brokers.sh, all in one run on one machine: a raw go-amqp
// pipe (the floor every run is compared with), fedrouter with one and
// with several queue routes (on its engine, and on the engine with
// --ack), Qpid Dispatch Router (qdrouterd, the other AMQP 1.0 router)
// moving the same messages, the RabbitMQ shovel plugin in its AMQP 0-9-1
// and AMQP 1.0 modes and qpidd's own federation; a message across two
// routers (transit, with the data path each forwarder ran on); memory
// under a large backlog; and the topology benchmarks (a full recompute,
// and one advertisement up to the updated next hops). It prints a table
// and writes the figures as JSON. `make bench` runs it; method and
// results are in docs/performance.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/routes"
)

// options are the knobs of one `fedbench run`.
type options struct {
	NSmall    int    `json:"messages_256b"`  // messages per case, 256 B
	NLarge    int    `json:"messages_16kib"` // messages per case, 16 KiB
	Sizes     []int  `json:"sizes"`
	Reps      int    `json:"reps"`
	Credit    int    `json:"credit"`     // route credit; the raw pipe's window and the shovels' prefetch
	EngineAck int    `json:"engine_ack"` // the routes' ack in the engine-ack variant
	Conns     int    `json:"conns"`      // connections per broker of the raw pipe and fedrouter; 0: one per route
	PipeProf  string `json:"-"`          // CPU profile of the raw pipe (the last run's)
	Many      int    `json:"routes"`     // routes in the "several routes" cases
	Backlog   int    `json:"backlog"`    // messages waiting at the source in the backlog case (0: skip)
	// BacklogPaths are the data paths the backlog case runs on: the
	// engine, the only one since go-amqp left the data path.
	BacklogPaths []string      `json:"backlog_data_paths"`
	Pairs        []string      `json:"pairs"`
	Variants     []string      `json:"variants"`
	Out          string        `json:"-"`
	Fedrouter    string        `json:"fedrouter"`
	Go           string        `json:"-"`
	Topology     bool          `json:"topology"`
	Control      int           `json:"control_routes"` // routes of the control-plane case (0: skip)
	OnlyCtl      bool          `json:"control_only"`   // the control-plane case alone
	Poll         time.Duration `json:"poll_ns"`
	Tmp          string        `json:"-"`
}

func main() {
	app := &cli.App{
		Name:  "fedbench",
		Usage: "fedrouter against a raw go-amqp pipe and the RabbitMQ shovel, on this machine",
		Commands: []*cli.Command{
			{
				Name:   "run",
				Usage:  "run the benchmarks, print the table, write the JSON",
				Flags:  runFlags(),
				Action: runBench,
			},
			pipeCommand(),
			tableCommand(),
			removedProfileCommand(),
		},
	}
	// A closed stdout (fedbench ... | head) must not kill the process
	// before it has removed what it created on the brokers.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.RunContext(ctx, os.Args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fedbench:", err)
		os.Exit(1)
	}
}

// removedProfileCommand answers `fedbench profile`, which profiled
// links.Forward over go-amqp in process until 2026-12-05, with what
// profiles the engine instead.
func removedProfileCommand() *cli.Command {
	return &cli.Command{
		Name: "profile", Hidden: true, SkipFlagParsing: true,
		Action: func(*cli.Context) error {
			return errors.New("profile was removed on 2026-12-05 with go-amqp's data path: profile the engine with " +
				"`go test -run '^$' -bench '^BenchmarkForward$' -cpuprofile cpu.out ./amqp/engine/` (docs/performance.md)")
		},
	}
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "n", Value: 50000, EnvVars: []string{"BENCH_N"}, Usage: "messages per case, 256-byte messages"},
		&cli.IntFlag{Name: "n-large", Value: 10000, EnvVars: []string{"BENCH_N_LARGE"}, Usage: "messages per case, 16 KiB messages"},
		&cli.IntSliceFlag{Name: "size", Value: cli.NewIntSlice(256, 16<<10), EnvVars: []string{"BENCH_SIZES"}, Usage: "message sizes in bytes; --n applies to 256 and below, --n-large above"},
		&cli.IntFlag{Name: "reps", Value: 3, EnvVars: []string{"BENCH_REPS"}, Usage: "runs per case; the median is reported"},
		&cli.IntFlag{Name: "credit", Value: routes.DefaultCredit, EnvVars: []string{"BENCH_CREDIT"}, Usage: "route credit (fedrouter's default); the raw pipe's window and the shovels' prefetch"},
		&cli.IntFlag{Name: "engine-ack", Value: 100, EnvVars: []string{"BENCH_ENGINE_ACK"}, Usage: "the routes' ack (qpid-route's --ack: a disposition after at most N deliveries) in the engine-ack variant"},
		&cli.IntFlag{Name: "conns", Value: 0, EnvVars: []string{"BENCH_CONNS"}, Usage: "connections per broker of the raw pipe and of fedrouter (brokers[].connections); 0: one per route, as each shovel has its own"},
		&cli.StringFlag{Name: "pipe-cpuprofile", Usage: "write the raw pipe's CPU profile to `FILE` (each run overwrites it)"},
		&cli.IntFlag{Name: "routes", Value: 8, EnvVars: []string{"BENCH_ROUTES"}, Usage: "routes in the several-routes cases"},
		&cli.IntFlag{Name: "backlog", Value: 1000000, EnvVars: []string{"BENCH_BACKLOG"}, Usage: "messages waiting at the source in the backlog case (0: skip)"},
		&cli.StringSliceFlag{Name: "backlog-data-path", Value: cli.NewStringSlice(routes.DataPathEngine), EnvVars: []string{"BENCH_BACKLOG_DATA_PATHS"}, Usage: "data path the backlog case runs on: engine, the only one (go-amqp was removed on 2026-12-05)"},
		&cli.StringSliceFlag{Name: "pair", Value: cli.NewStringSlice("rabbitmq", "proton", kindQpidd), EnvVars: []string{"BENCH_PAIRS"}, Usage: "broker pairs: rabbitmq (rabbit1->rabbit2), proton (proton1->proton2), qpidd (qpidd1->qpidd2 of testdata/qpidd.sh; left out of the default when the shared build is absent)"},
		&cli.StringSliceFlag{Name: "variant", Value: cli.NewStringSlice(defaultVariantNames...), EnvVars: []string{"BENCH_VARIANTS"}, Usage: "variants: raw (the raw go-amqp pipe, the baseline), engine (fedrouter's queue routes), engine-ack (the same, the routes with --engine-ack), qdrouterd (Qpid Dispatch Router 1.19 from the shared build, one worker thread, auto-links; left out of the default when the build is absent), shovel091, shovel10, fanout (an exchange route fanning out through transit, RabbitMQ), transit-engine (a queue route rabbit1 -> rabbit3 across two routers through rabbit2's transit queue; a forwarder of the way not on the engine fails the run), qpidfed (qpidd's own federation: a link and bridges made through QMF, qpidd); fedrouter and transit (fedrouter on go-amqp) were removed on 2026-12-05"},
		&cli.StringFlag{Name: "out", Value: "bench-results.json", EnvVars: []string{"BENCH_OUT"}, Usage: "write the results as JSON to `FILE`"},
		&cli.StringFlag{Name: "fedrouter", Value: "bin/fedrouter", Usage: "the fedrouter binary to measure"},
		&cli.StringFlag{Name: "go", Value: "go", Usage: "go command, for the topology benchmark"},
		&cli.BoolFlag{Name: "topology", Value: true, Usage: "run the topology benchmarks (full recompute; advertisement to next hops)"},
		&cli.IntFlag{Name: "control-routes", Value: 10000, EnvVars: []string{"BENCH_CONTROL_ROUTES"}, Usage: "durable routes the control-plane case adds, lists, restarts with and flushes (0: skip)"},
		&cli.BoolFlag{Name: "control-only", EnvVars: []string{"BENCH_CONTROL_ONLY"}, Usage: "run the control-plane case alone (RabbitMQ pair)"},
		&cli.DurationFlag{Name: "poll", Value: 20 * time.Millisecond, Usage: "how often completion is polled"},
	}
}

// variantNames are the names --variant takes.
var variantNames = map[string]string{"raw": vRaw, "engine": vEngine, "engine-ack": vEngineAck, "qdrouterd": vQdrouterd, "shovel091": vShovel091, "shovel10": vShovel10, "fanout": vFanout, "transit-engine": vTransitEngine, "qpidfed": vQpidFed}

// defaultVariantNames are every variant, in the order a round runs them.
var defaultVariantNames = []string{"raw", "engine", "engine-ack", "qdrouterd", "shovel091", "shovel10", "fanout", "transit-engine", "qpidfed"}

// removedVariants are the variants that ran fedrouter on go-amqp, and
// what measures the same on the engine. Refused by name: "fedrouter"
// meant go-amqp in every results file and page before 2026-12-05, so it
// is not reused for the engine.
var removedVariants = map[string]string{"fedrouter": "engine", "transit": "transit-engine"}

// parseVariants maps --variant's names to the variants, refusing an
// unknown or removed one with what to ask for instead.
func parseVariants(names []string) ([]string, error) {
	var out []string
	for _, v := range names {
		if now, ok := removedVariants[v]; ok {
			return nil, fmt.Errorf("--variant %q: fedrouter on the go-amqp data path was removed on 2026-12-05 (every route runs on the engine): ask for %s", v, now)
		}
		name, ok := variantNames[v]
		if !ok {
			return nil, fmt.Errorf("--variant %q: want one of %s", v, strings.Join(defaultVariantNames, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

func runBench(c *cli.Context) error {
	o := options{
		NSmall: c.Int("n"), NLarge: c.Int("n-large"), Reps: max(1, c.Int("reps")), Credit: c.Int("credit"), EngineAck: c.Int("engine-ack"), Conns: max(0, c.Int("conns")), PipeProf: c.String("pipe-cpuprofile"),
		Sizes: c.IntSlice("size"), Many: max(1, c.Int("routes")), Backlog: c.Int("backlog"), Pairs: c.StringSlice("pair"), Out: c.String("out"),
		Fedrouter: c.String("fedrouter"), Go: c.String("go"), Topology: c.Bool("topology"), Poll: c.Duration("poll"),
		Control: max(0, c.Int("control-routes")), OnlyCtl: c.Bool("control-only"),
		Tmp: os.TempDir(),
	}
	var err error
	if o.Variants, err = parseVariants(c.StringSlice("variant")); err != nil {
		return err
	}
	paths, err := backlogDataPaths(c.StringSlice("backlog-data-path"))
	if err != nil {
		return err
	}
	o.BacklogPaths = paths
	variants, skippedV, err := defaultVariants(o.Variants, c.IsSet("variant"), qdrouterdAvailable())
	if err != nil {
		return err
	}
	if skippedV != "" {
		fmt.Fprintln(os.Stderr, skippedV)
	}
	o.Variants = variants
	pairs, skipped, err := defaultPairs(o.Pairs, c.IsSet("pair"), qpiddAvailable(c.Context))
	if err != nil {
		return err
	}
	if skipped != "" {
		fmt.Fprintln(os.Stderr, skipped)
	}
	o.Pairs = pairs
	if o.Credit < 1 || o.Credit > 10000 {
		return fmt.Errorf("--credit %d: want 1..10000 (a route's range)", o.Credit)
	}
	if o.EngineAck < 1 {
		return fmt.Errorf("--engine-ack %d: want at least 1", o.EngineAck)
	}
	if _, err := os.Stat(o.Fedrouter); err != nil {
		return fmt.Errorf("fedrouter binary: %w (make build)", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	b := &bench{opt: o, self: self, id: fmt.Sprintf("fedbench.%x", time.Now().UnixNano()&0xffffffff)}
	return b.run(c.Context)
}
