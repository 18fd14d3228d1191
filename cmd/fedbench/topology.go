package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// The topology benchmarks (topology/bench_test.go), at 1,000 brokers and
// 5,000 links from 100 routers: a full recompute (every broker's
// shortest-path tree, from scratch), and one changed advertisement up to
// the updated next hops of 20 origins (what a router pays per update).
const (
	benchRecompute = "BenchmarkRecompute1000"
	benchUpdate    = "BenchmarkAdvertisementToNextHop1000"
)

// topoResult is one topology benchmark: medians of its runs.
type topoResult struct {
	Benchmark   string    `json:"benchmark"`
	NsPerOp     float64   `json:"ns_per_op"` // median
	Runs        []float64 `json:"runs_ns_per_op"`
	BytesPerOp  float64   `json:"bytes_per_op,omitempty"`  // median
	AllocsPerOp float64   `json:"allocs_per_op,omitempty"` // median
	Error       string    `json:"error,omitempty"`

	bytes, allocs []float64
}

// runTopology runs both benchmarks through one `go test` (they live in
// the package's tests) and reads ns/op, B/op and allocs/op from its
// output.
func runTopology(ctx context.Context, goCmd string) (recompute, update *topoResult, err error) {
	re := "^(" + benchRecompute + "|" + benchUpdate + ")$"
	cmd := exec.CommandContext(ctx, goCmd, "test", "-run", "^$", "-bench", re, "-benchmem", "-count", "3", "./topology/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, nil, fmt.Errorf("go test -bench %s: %w: %s", re, err, out)
	}
	recompute, update = &topoResult{Benchmark: benchRecompute}, &topoResult{Benchmark: benchUpdate}
	for _, line := range strings.Split(string(out), "\n") {
		for _, r := range []*topoResult{recompute, update} {
			r.parse(line)
		}
	}
	for _, r := range []*topoResult{recompute, update} {
		if len(r.Runs) == 0 {
			return nil, nil, fmt.Errorf("no ns/op for %s in the output of go test -bench: %s", r.Benchmark, out)
		}
		r.NsPerOp, r.BytesPerOp, r.AllocsPerOp = medianOf(r.Runs), medianOf(r.bytes), medianOf(r.allocs)
	}
	return recompute, update, nil
}

// parse takes the figures from a result line of this benchmark:
// "BenchmarkX-2  20  9403824 ns/op  2080118 B/op  20161 allocs/op".
func (r *topoResult) parse(line string) {
	f := strings.Fields(line)
	if len(f) < 4 || (f[0] != r.Benchmark && !strings.HasPrefix(f[0], r.Benchmark+"-")) {
		return
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			continue
		}
		switch f[i+1] {
		case "ns/op":
			r.Runs = append(r.Runs, v)
		case "B/op":
			r.bytes = append(r.bytes, v)
		case "allocs/op":
			r.allocs = append(r.allocs, v)
		}
	}
}

// String is the report's line: median time, memory and allocations.
func (r *topoResult) String() string {
	if r.Error != "" {
		return fmt.Sprintf("%s FAILED: %s", r.Benchmark, r.Error)
	}
	return fmt.Sprintf("%s median %.1f ms/op, %.1f MB/op, %.0f allocs/op (%d runs: %v ns/op)",
		r.Benchmark, r.NsPerOp/1e6, r.BytesPerOp/1e6, r.AllocsPerOp, len(r.Runs), r.Runs)
}
