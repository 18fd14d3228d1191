// Command fedchaos is fedrouter's fault suite (`make chaos`, `make
// chaos-short`). It runs a real `fedrouter run` process with one durable
// queue route from a source RabbitMQ node to a destination node, publishes
// N messages with unique ids at the source and consumes them at the
// destination, while it kills (-9) and restarts the destination broker,
// kills (-9) and restarts the router, and cuts and heals the router's links
// through fault proxies, several times each. It prints sent, received,
// lost and duplicated, and exits 1 if anything was lost or the duplicates
// exceed the route's in-flight window per fault. docs/chaos.md has the
// details and measured results.
//
// The destination broker is killed: point -dst only at a broker of the
// harness (testdata/brokers.sh) that nobody else is using.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options are the suite's flags.
type options struct {
	N             int
	Rounds        int
	Faults        []faultKind
	Credit        int
	PublishWindow int
	ConsumeWindow int
	Fedrouter     string
	Src, Dst      string
	Hold          time.Duration
	FaultTimeout  time.Duration
	DrainTimeout  time.Duration
	Timeout       time.Duration
	Workdir       string
	Keep          bool
	// Cluster is the number of members of a router cluster (0: a single
	// router); Store, Heartbeat and Lease are the cluster's.
	Cluster          int
	Store            string
	Heartbeat, Lease time.Duration
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitPass  = 0
	exitFail  = 1 // loss, too many duplicates, a fault the router did not recover from; or the report not written
	exitSetup = 2 // bad flags, brokers or router not usable: nothing was tested
)

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fedchaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.N, "n", 50000, "messages to send through the router")
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds of faults; each round injects every kind in -faults once")
	faults := fs.String("faults", "", "fault kinds, comma-separated: "+joinKinds(knownFaults)+
		"\n(default "+joinKindsComma(defaultFaults)+"; with -cluster "+joinKindsComma(clusterFaults)+")")
	fs.IntVar(&o.Credit, "credit", 200, "the route's credit (in-flight window); bounds duplicates per fault")
	fs.IntVar(&o.PublishWindow, "publish-window", 500, "publisher: sends awaiting the source broker's outcome")
	fs.IntVar(&o.ConsumeWindow, "consume-window", 100, "consumer: credit per grant at the destination")
	fs.StringVar(&o.Fedrouter, "fedrouter", "bin/fedrouter", "the fedrouter binary to run")
	fs.StringVar(&o.Src, "src", "rabbit3", "source broker (harness name); never killed")
	fs.StringVar(&o.Dst, "dst", "rabbit4", "destination broker (harness name); KILLED AND RESTARTED")
	fs.DurationVar(&o.Hold, "hold", 2*time.Second, "how long a cut, blackhole or store crash lasts (a cut at least until the router notices it), and a killed cluster member stays down")
	fs.DurationVar(&o.FaultTimeout, "fault-timeout", 2*time.Minute, "give up when the router has not forwarded again this long after a fault healed")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", 3*time.Minute, "give up when the stream has not fully arrived this long after the last fault")
	fs.DurationVar(&o.Timeout, "timeout", 20*time.Minute, "deadline for the whole run")
	fs.StringVar(&o.Workdir, "workdir", "", "directory for the router's config, state file and logs (default: a new temporary one, removed after a pass)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the work directory after a pass")
	fs.IntVar(&o.Cluster, "cluster", 0, "run a router cluster of this many members (at least 2) instead of a single router")
	// Not os.Getenv as the default: -h would print the password.
	fs.StringVar(&o.Store, "store", "", "with -cluster: the cluster store's postgres:// URL (default $DATABASE_URL); store-kill KILLS IT")
	fs.DurationVar(&o.Heartbeat, "heartbeat", 500*time.Millisecond, "with -cluster: the members' heartbeat")
	fs.DurationVar(&o.Lease, "lease", 2*time.Second, "with -cluster: the routes' lease")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() != 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.Cluster > 0 && !set["store"] {
		o.Store = os.Getenv("DATABASE_URL")
	}
	var err error
	if *faults == "" {
		o.Faults = defaultFaultsFor(o.Cluster > 0)
	} else if o.Faults, err = parseFaults(*faults); err != nil {
		return o, err
	}
	return o, errors.Join(append(o.problems(), o.clusterProblems(set)...)...)
}

// problems checks the flags of either mode.
func (o options) problems() []error {
	var problems []error
	if o.N < 100 {
		problems = append(problems, fmt.Errorf("-n %d: at least 100", o.N))
	}
	if o.Rounds < 1 {
		problems = append(problems, fmt.Errorf("-rounds %d: at least 1", o.Rounds))
	}
	if o.Credit < 1 || o.Credit > 10000 {
		problems = append(problems, fmt.Errorf("-credit %d: 1..10000", o.Credit))
	}
	if o.PublishWindow < 1 || o.ConsumeWindow < 1 {
		problems = append(problems, errors.New("-publish-window and -consume-window: at least 1"))
	}
	if o.Src == o.Dst {
		problems = append(problems, fmt.Errorf("-src and -dst are both %q", o.Src))
	}
	if o.Hold <= 0 || o.FaultTimeout <= 0 || o.DrainTimeout <= 0 || o.Timeout <= 0 {
		problems = append(problems, errors.New("-hold, -fault-timeout, -drain-timeout and -timeout must be positive"))
	}
	return problems
}

// clusterProblems checks -cluster and the flags that go with it; set
// holds the flags given on the command line.
func (o options) clusterProblems(set map[string]bool) []error {
	var problems []error
	if o.Cluster == 0 {
		for _, k := range o.Faults {
			if slices.Contains(clusterOnly, k) {
				problems = append(problems, fmt.Errorf("-faults %s: needs -cluster (a single router has no lease to lose and no store)", k))
			}
		}
		for _, f := range []string{"store", "heartbeat", "lease"} {
			if set[f] {
				problems = append(problems, fmt.Errorf("-%s: only with -cluster", f))
			}
		}
		return problems
	}
	if o.Cluster < 2 || o.Cluster > 9 {
		problems = append(problems, fmt.Errorf("-cluster %d: 2 to 9 members (a cluster of one takes nothing over; 0 runs a single router)", o.Cluster))
	}
	switch {
	case o.Store == "":
		problems = append(problems, errors.New("-cluster: no store: give -store or set DATABASE_URL (bash testdata/postgres.sh start prints it)"))
	case !strings.HasPrefix(o.Store, "postgres://") && !strings.HasPrefix(o.Store, "postgresql://"):
		problems = append(problems, errors.New("-store: want a postgres:// URL"))
	}
	if o.Heartbeat < 100*time.Millisecond || o.Heartbeat > time.Minute {
		problems = append(problems, fmt.Errorf("-heartbeat %v: 100ms to 1m", o.Heartbeat))
	}
	if o.Lease < 2*o.Heartbeat {
		problems = append(problems, fmt.Errorf("-lease %v: at least two heartbeats (%v)", o.Lease, 2*o.Heartbeat))
	}
	return problems
}

func joinKindsComma(ks []faultKind) string {
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ","
		}
		s += string(k)
	}
	return s
}

func realMain(args []string, stdout, stderr io.Writer) int {
	opt, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitPass
	}
	if err != nil {
		return setupFailed(stderr, "%v", err)
	}
	logger := log.New(stderr, "fedchaos ", log.Ltime|log.Lmicroseconds|log.Lmsgprefix)
	ctx, cancel := context.WithTimeout(context.Background(), opt.Timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	s := &suite{opt: opt, log: logger, run: newRunID()}
	if s.dir = opt.Workdir; s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "fedchaos-"); err != nil {
			return setupFailed(stderr, "%v", err)
		}
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return setupFailed(stderr, "%v", err)
	}
	mode := "a single router"
	if opt.Cluster > 0 {
		mode = fmt.Sprintf("a cluster of %d (heartbeat %v, lease %v)", opt.Cluster, opt.Heartbeat, opt.Lease)
	}
	logger.Printf("run %s: %d messages, %d rounds of %s, %s -> %s through %s, work directory %s",
		s.run, opt.N, opt.Rounds, joinKinds(opt.Faults), opt.Src, opt.Dst, mode, s.dir)

	start := time.Now()
	if err := s.setup(ctx); err != nil {
		s.cleanup(ctx)
		return setupFailed(stderr, "setup: %v\n(work directory %s)", err, s.dir)
	}
	runErr := s.stream(ctx)
	if runErr != nil {
		s.log.Printf("stopping the schedule: %v", runErr)
	}
	s.log.Printf("draining: %s", s.progressLine())
	if err := s.drain(ctx, runErr == nil); err != nil {
		runErr = errors.Join(runErr, err)
	}
	s.elapsed = time.Since(start)
	if h, err := s.fleet.locate(ctx); err == nil {
		s.lastRt, s.lastRun = h.st, h.run()
	}
	runErr = errors.Join(runErr, s.violations(), s.fleet.exitedAlone())
	s.cleanup(ctx) // stops the routers and the consumer: the counts are final
	_, acked, retries := s.pub.progress()
	v := judge(opt, acked, retries, s.con.snapshot(true), s.audit, s.audited, len(s.results), runErr)
	if err := report(stdout, s, v); err != nil {
		logger.Printf("writing the report: %v (work directory %s kept)", err, s.dir)
		return exitFail
	}
	if !v.Pass() {
		return exitFail
	}
	if opt.Workdir == "" && !opt.Keep {
		if err := os.RemoveAll(s.dir); err != nil {
			logger.Printf("removing the work directory: %v", err)
		}
	}
	return exitPass
}

// setupFailed prints why nothing was tested and returns exitSetup, which
// says so even when stderr cannot be written.
func setupFailed(stderr io.Writer, format string, args ...any) int {
	_, _ = fmt.Fprintf(stderr, "fedchaos: "+format+"\n", args...)
	return exitSetup
}
