package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// result is one case with its runs and medians.
type result struct {
	caseSpec
	Runs []*sample `json:"runs"`
	// Medians over the runs, each figure on its own.
	Rate             float64 `json:"msgs_per_s"`
	ProcCPUPer100k   float64 `json:"process_cpu_s_per_100k"`
	BrokerCPUPer100k float64 `json:"broker_cpu_s_per_100k"`
	PeakRSSMiB       float64 `json:"peak_rss_mib"`
	// RouterCPUPer100k: each router's median, when a variant runs
	// several (transit: A, B).
	RouterCPUPer100k []float64 `json:"router_cpu_s_per_100k,omitempty"`
	VsRaw            *float64  `json:"fedrouter_vs_raw,omitempty"`
	VsShovel         *float64  `json:"fedrouter_vs_best_shovel,omitempty"`
	BestShovel       string    `json:"best_shovel,omitempty"`
	VsQpidFed        *float64  `json:"fedrouter_vs_qpidd_federation,omitempty"`
	// VsQdrouterd and CPUVsQdrouterd: fedrouter's msg/s and router CPU
	// per message over Qpid Dispatch's on the same case.
	VsQdrouterd    *float64 `json:"fedrouter_vs_qdrouterd,omitempty"`
	CPUVsQdrouterd *float64 `json:"fedrouter_cpu_vs_qdrouterd,omitempty"`
	Errors         []string `json:"errors,omitempty"`
	// Retried are the failures of runs that were run again (and
	// succeeded, or failed again: then in Errors too).
	Retried []string `json:"retried,omitempty"`
}

func (b *bench) pairs() ([]pairDef, error) {
	var out []pairDef
	for _, p := range b.opt.Pairs {
		switch p {
		case "rabbitmq":
			bs, err := loadBrokers("rabbit1", "rabbit2")
			if err != nil {
				return nil, err
			}
			pd := pairDef{Name: "RabbitMQ->RabbitMQ", Src: bs["rabbit1"], Dst: bs["rabbit2"], Shovel: true}
			if slices.ContainsFunc(b.opt.Variants, isTransit) {
				far, err := loadBrokers(transitFar)
				if err != nil {
					fmt.Fprintf(os.Stderr, "the transit variant is skipped: %v\n", err)
				} else {
					pd.Far = far[transitFar]
				}
			}
			out = append(out, pd)
		case "proton":
			bs, err := loadBrokers("proton1", "proton2")
			if err != nil {
				return nil, err
			}
			out = append(out, pairDef{Name: "ProtonC->ProtonC", Src: bs["proton1"], Dst: bs["proton2"], PreSettled: true})
		case kindQpidd:
			p, err := qpiddPair()
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		default:
			return nil, fmt.Errorf("--pair %q: want rabbitmq, proton or qpidd", p)
		}
	}
	return out, nil
}

// cases lists every case in the order of one round.
func (b *bench) cases(pairs []pairDef) []caseSpec {
	var out []caseSpec
	for _, p := range pairs {
		for _, size := range b.opt.Sizes {
			n := b.opt.NSmall
			if size > 256 {
				n = b.opt.NLarge
			}
			for _, routes := range slices.Compact([]int{1, b.opt.Many}) {
				for _, v := range b.opt.Variants {
					if (v == vShovel091 || v == vShovel10 || v == vFanout) && !p.Shovel {
						continue // RabbitMQ only
					}
					if v == vQpidFed && !p.QpidFed {
						continue // qpidd only
					}
					if v == vQdrouterd && p.PreSettled {
						continue // at-least-once pairs only (pairDef.PreSettled)
					}
					if isTransit(v) && p.Far.Name == "" {
						continue // RabbitMQ, with a third node
					}
					m := n / routes * routes // every route gets the same share
					c := caseSpec{Pair: p.Name, Size: size, Variant: v, Routes: routes, Messages: m}
					if v == vEngineAck {
						c.Ack = b.opt.EngineAck
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func (b *bench) run(ctx context.Context) error {
	pairs, err := b.pairs()
	if err != nil {
		return err
	}
	byName := map[string]pairDef{}
	for _, p := range pairs {
		byName[p.Name] = p
	}
	defer func() { // after the sweep: it still needs them
		for _, br := range rabbitNodes(pairs) {
			br.mgmt.Close()
		}
	}()
	rep := newReport(ctx, b, pairs)
	defer b.sweep(pairs)
	b.warnStale(ctx, pairs)
	var cases []caseSpec
	if !b.opt.OnlyCtl {
		cases = b.cases(pairs)
	}
	results := make([]*result, len(cases))
	for i, c := range cases {
		results[i] = &result{caseSpec: c}
	}
	start := time.Now()
	// Rounds: every case once per round, so a slow spell of the shared
	// machine hits all variants alike rather than one variant's runs.
	for r := 1; r <= b.opt.Reps; r++ {
		for i, c := range cases {
			if err := runWithRetry(ctx, results[i], r, b.opt.Reps, start, func() (*sample, error) { return b.runCase(ctx, c, byName[c.Pair]) }); err != nil {
				return err
			}
		}
	}
	b.pending.Wait()
	summarize(results)
	rep.Results = results
	if b.opt.Control > 0 && byName["RabbitMQ->RabbitMQ"].Src.Name != "" {
		fmt.Fprintf(os.Stderr, "[%s] control plane: %d routes ...\n", time.Since(start).Round(time.Second), b.opt.Control)
		cp, err := b.runControl(ctx, byName["RabbitMQ->RabbitMQ"])
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(os.Stderr, "control plane FAILED: %v\n", err)
			if cp == nil {
				cp = &controlResult{}
			}
			cp.Error = err.Error()
		}
		rep.Control = cp
	}
	if b.opt.Backlog > 0 && !b.opt.OnlyCtl && byName["RabbitMQ->RabbitMQ"].Src.Name != "" {
		if rep.Backlogs, err = b.runBacklogs(ctx, byName["RabbitMQ->RabbitMQ"], start); err != nil {
			return err
		}
	}
	if b.opt.Topology && !b.opt.OnlyCtl {
		fmt.Fprintf(os.Stderr, "[%s] topology benchmarks ...\n", time.Since(start).Round(time.Second))
		full, update, err := runTopology(ctx, b.opt.Go)
		if err != nil {
			fmt.Fprintf(os.Stderr, "topology FAILED: %v\n", err)
			full = &topoResult{Benchmark: benchRecompute, Error: err.Error()}
		}
		rep.Topology, rep.TopologyUpdate = full, update
	}
	rep.finish(time.Since(start))
	printErr := rep.print(os.Stdout) // the file below is written all the same
	if err := rep.write(b.opt.Out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", b.opt.Out)
	if printErr != nil {
		return fmt.Errorf("printing the summary: %w", printErr)
	}
	return rep.failures()
}

// runWithRetry runs res's case (run: one attempt, on new objects) in
// round r of reps, and once more if that fails (nextStep); it records the
// sample, or the failure, in res. Its error is the bench's context's,
// when the bench is being stopped.
func runWithRetry(ctx context.Context, res *result, r, reps int, start time.Time, run func() (*sample, error)) error {
	for attempt := 1; ; attempt++ {
		fmt.Fprintf(os.Stderr, "[%s] round %d/%d: %s ... ", time.Since(start).Round(time.Second), r, reps, res.caseSpec)
		s, err := run()
		switch nextStep(attempt, err, ctx.Err() != nil) {
		case stepDone:
			fmt.Fprintf(os.Stderr, "%.0f msg/s (fill %.1fs, wait %.1fs)\n", s.Rate, s.FillSecs, s.WaitSecs)
			res.Runs = append(res.Runs, s)
			return nil
		case stepAbort:
			return ctx.Err()
		case stepRetry:
			fmt.Fprintf(os.Stderr, "FAILED, running it again once: %v\n", err)
			res.Retried = append(res.Retried, fmt.Sprintf("round %d: %v", r, err))
		case stepFail:
			fmt.Fprintf(os.Stderr, "FAILED: %v\n", err)
			res.Errors = append(res.Errors, err.Error())
			return nil
		}
	}
}

// summarize computes each case's medians and the ratios.
func summarize(results []*result) {
	type key struct {
		pair         string
		size, routes int
	}
	raw, qfed := map[key]float64{}, map[key]float64{}
	shov, qdr := map[key]*result{}, map[key]*result{}
	for _, r := range results {
		if len(r.Runs) == 0 {
			continue
		}
		r.Rate = median(r.Runs, func(s *sample) float64 { return s.Rate })
		r.ProcCPUPer100k = median(r.Runs, func(s *sample) float64 { return s.ProcCPU / float64(r.Messages) * 1e5 })
		r.BrokerCPUPer100k = median(r.Runs, func(s *sample) float64 { return s.BrokerCPU / float64(r.Messages) * 1e5 })
		r.PeakRSSMiB = median(r.Runs, func(s *sample) float64 { return float64(s.PeakRSS) / 1024 })
		for i := range r.Runs[0].RouterCPU {
			r.RouterCPUPer100k = append(r.RouterCPUPer100k, median(r.Runs, func(s *sample) float64 { return s.RouterCPU[i] / float64(r.Messages) * 1e5 }))
		}
		k := key{r.Pair, r.Size, r.Routes}
		switch r.Variant {
		case vRaw:
			raw[k] = r.Rate
		case vShovel091, vShovel10:
			if best := shov[k]; best == nil || r.Rate > best.Rate {
				shov[k] = r
			}
		case vQpidFed:
			qfed[k] = r.Rate
		case vQdrouterd:
			qdr[k] = r
		}
	}
	for _, r := range results {
		k := key{r.Pair, r.Size, r.Routes}
		if !isFedrouter(r.Variant) || r.Rate == 0 {
			continue
		}
		if v := raw[k]; v > 0 {
			x := r.Rate / v
			r.VsRaw = &x
		}
		if isTransit(r.Variant) {
			continue // two hops: no one-hop native forwarder to compare with
		}
		if s := shov[k]; s != nil {
			x := r.Rate / s.Rate
			r.VsShovel, r.BestShovel = &x, s.Variant
		}
		if v := qfed[k]; v > 0 {
			x := r.Rate / v
			r.VsQpidFed = &x
		}
		if q := qdr[k]; q != nil && isQueueRoute(r.Variant) {
			r.VsQdrouterd, r.CPUVsQdrouterd = ratio(r.Rate, q.Rate), ratio(r.ProcCPUPer100k, q.ProcCPUPer100k)
		}
	}
}

// isFedrouter says whether variant v is fedrouter's: its figures get
// ratios to the baselines.
func isFedrouter(v string) bool { return isQueueRoute(v) || v == vFanout || isTransit(v) }

// isQueueRoute says whether variant v is fedrouter's one-hop queue
// routes, which move the same messages as Qpid Dispatch's auto-links.
func isQueueRoute(v string) bool { return v == vEngine || v == vEngineAck }

// ratio is a/b, or nil when b is not positive.
func ratio(a, b float64) *float64 {
	if b <= 0 {
		return nil
	}
	x := a / b
	return &x
}

func median(runs []*sample, f func(*sample) float64) float64 {
	v := make([]float64, len(runs))
	for i, s := range runs {
		v[i] = f(s)
	}
	return medianOf(v)
}

// medianOf returns the median of v (0 for none); v is sorted in place.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// warnStale reports objects an earlier, killed fedbench left on the
// RabbitMQ nodes. They are not removed: another fedbench might be running.
func (b *bench) warnStale(ctx context.Context, pairs []pairDef) {
	for _, br := range rabbitNodes(pairs) {
		for _, k := range rabbitKinds(br.mgmt) {
			names, err := k.list(ctx)
			if err != nil {
				fmt.Fprintf(os.Stderr, "warning: list %s on %s: %v\n", k.name, br.Name, err)
				continue
			}
			for _, n := range names {
				if strings.HasPrefix(n, "fedbench.") {
					fmt.Fprintf(os.Stderr, "warning: %s has %s %q from an earlier fedbench run; delete it if no fedbench runs\n", br.Name, k.name, n)
				}
			}
		}
	}
}

// sweep deletes whatever this run left behind on the RabbitMQ nodes and
// the qpidd brokers (a failed or interrupted run).
func (b *bench) sweep(pairs []pairDef) {
	b.pending.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.sweepQpidd(ctx, pairs)
	for _, br := range rabbitNodes(pairs) {
		for _, k := range rabbitKinds(br.mgmt) {
			names, err := k.list(ctx)
			if err != nil {
				fmt.Fprintf(os.Stderr, "warning: clean-up on %s: %v\n", br.Name, err)
				continue
			}
			for _, n := range names {
				if !strings.HasPrefix(n, b.id+".") {
					continue
				}
				if err := k.del(ctx, n); err != nil {
					fmt.Fprintf(os.Stderr, "warning: clean-up on %s: %v\n", br.Name, err)
				}
			}
		}
	}
}

// rabbitNodes are the brokers of the pairs that have a management API,
// each once.
func rabbitNodes(pairs []pairDef) []broker {
	return pairBrokers(pairs, func(b broker) bool { return b.mgmt != nil })
}

// pairBrokers are the brokers of the pairs that keep accepts, each once.
func pairBrokers(pairs []pairDef, keep func(broker) bool) []broker {
	var out []broker
	seen := map[string]bool{}
	for _, p := range pairs {
		for _, br := range []broker{p.Src, p.Dst, p.Far} {
			if br.Name != "" && keep(br) && !seen[br.Name] {
				seen[br.Name] = true
				out = append(out, br)
			}
		}
	}
	return out
}

var errFailures = errors.New("some cases failed or were not verified (see the table)")
