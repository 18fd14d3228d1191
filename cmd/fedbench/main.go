// Command fedbench measures fedrouter against its baselines on the brokers
// of testdata/brokers.sh, all in one run on one machine: a raw go-amqp
// pipe (the floor), fedrouter with one and with several queue routes
// (on the go-amqp data path, on its own engine, and on the engine with
// --ack),
// Qpid Dispatch Router (qdrouterd, the other AMQP 1.0 router) moving the
// same messages, the RabbitMQ shovel plugin in its AMQP 0-9-1 and AMQP
// 1.0 modes and qpidd's own federation; a message across two routers
// (transit, on each data path, with the data path each forwarder ran on);
// memory under a large backlog, on each data path; and the topology
// benchmarks (a full recompute, and
// one advertisement up to the updated next hops). It prints a table and
// writes the figures as JSON. `make bench` runs it; method and results are
// in docs/performance.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
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
	// BacklogPaths are the data paths the backlog case runs on, each once.
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
			profileCommand(),
			tableCommand(),
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
		&cli.StringSliceFlag{Name: "backlog-data-path", Value: cli.NewStringSlice(routes.DataPathGoAMQP, routes.DataPathEngine), EnvVars: []string{"BENCH_BACKLOG_DATA_PATHS"}, Usage: "data paths the backlog case runs on, one run each: go-amqp, engine"},
		&cli.StringSliceFlag{Name: "pair", Value: cli.NewStringSlice("rabbitmq", "proton", kindQpidd), EnvVars: []string{"BENCH_PAIRS"}, Usage: "broker pairs: rabbitmq (rabbit1->rabbit2), proton (proton1->proton2), qpidd (qpidd1->qpidd2 of testdata/qpidd.sh; left out of the default when the shared build is absent)"},
		&cli.StringSliceFlag{Name: "variant", Value: cli.NewStringSlice("raw", "fedrouter", "engine", "engine-ack", "qdrouterd", "shovel091", "shovel10", "fanout", "transit", "transit-engine", "qpidfed"), EnvVars: []string{"BENCH_VARIANTS"}, Usage: "variants: raw, fedrouter (queue routes, data_path go-amqp), engine (the same, data_path engine), engine-ack (data_path engine, the routes with --engine-ack), qdrouterd (Qpid Dispatch Router 1.19 from the shared build, one worker thread, auto-links; left out of the default when the build is absent), shovel091, shovel10, fanout (an exchange route fanning out through transit, RabbitMQ), transit (a queue route rabbit1 -> rabbit3 across two routers through rabbit2's transit queue), transit-engine (the same, both routers on data_path engine; a run some forwarder of which the engine did not carry is reported as not on the engine, without figures), qpidfed (qpidd's own federation: a link and bridges made through QMF, qpidd)"},
		&cli.StringFlag{Name: "out", Value: "bench-results.json", EnvVars: []string{"BENCH_OUT"}, Usage: "write the results as JSON to `FILE`"},
		&cli.StringFlag{Name: "fedrouter", Value: "bin/fedrouter", Usage: "the fedrouter binary to measure"},
		&cli.StringFlag{Name: "go", Value: "go", Usage: "go command, for the topology benchmark"},
		&cli.BoolFlag{Name: "topology", Value: true, Usage: "run the topology benchmarks (full recompute; advertisement to next hops)"},
		&cli.IntFlag{Name: "control-routes", Value: 10000, EnvVars: []string{"BENCH_CONTROL_ROUTES"}, Usage: "durable routes the control-plane case adds, lists, restarts with and flushes (0: skip)"},
		&cli.BoolFlag{Name: "control-only", EnvVars: []string{"BENCH_CONTROL_ONLY"}, Usage: "run the control-plane case alone (RabbitMQ pair)"},
		&cli.DurationFlag{Name: "poll", Value: 20 * time.Millisecond, Usage: "how often completion is polled"},
	}
}

var variantNames = map[string]string{"raw": vRaw, "fedrouter": vFedrouter, "engine": vEngine, "engine-ack": vEngineAck, "shovel091": vShovel091, "shovel10": vShovel10, "fanout": vFanout, "transit": vTransit, "transit-engine": vTransitEngine, "qpidfed": vQpidFed, "qdrouterd": vQdrouterd}

func runBench(c *cli.Context) error {
	o := options{
		NSmall: c.Int("n"), NLarge: c.Int("n-large"), Reps: max(1, c.Int("reps")), Credit: c.Int("credit"), EngineAck: c.Int("engine-ack"), Conns: max(0, c.Int("conns")), PipeProf: c.String("pipe-cpuprofile"),
		Sizes: c.IntSlice("size"), Many: max(1, c.Int("routes")), Backlog: c.Int("backlog"), Pairs: c.StringSlice("pair"), Out: c.String("out"),
		Fedrouter: c.String("fedrouter"), Go: c.String("go"), Topology: c.Bool("topology"), Poll: c.Duration("poll"),
		Control: max(0, c.Int("control-routes")), OnlyCtl: c.Bool("control-only"),
		Tmp: os.TempDir(),
	}
	for _, v := range c.StringSlice("variant") {
		name, ok := variantNames[v]
		if !ok {
			return fmt.Errorf("--variant %q: want raw, fedrouter, engine, engine-ack, qdrouterd, shovel091, shovel10, fanout, transit, transit-engine or qpidfed", v)
		}
		o.Variants = append(o.Variants, name)
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
