package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// topoResult is the topology recompute benchmark (topology/sim_test.go:
// one full recompute over 1,000 brokers and 5,000 links from 100 routers).
type topoResult struct {
	Benchmark string    `json:"benchmark"`
	NsPerOp   float64   `json:"ns_per_op"` // median
	Runs      []float64 `json:"runs_ns_per_op"`
	Error     string    `json:"error,omitempty"`
}

// runTopology runs the benchmark through `go test` (it lives in the
// package's tests) and reads ns/op from its output.
func runTopology(ctx context.Context, goCmd string) (*topoResult, error) {
	const name = "BenchmarkRecompute1000"
	cmd := exec.CommandContext(ctx, goCmd, "test", "-run", "^$", "-bench", "^"+name+"$", "-count", "3", "./topology/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench %s: %w: %s", name, err, out)
	}
	r := &topoResult{Benchmark: name}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && strings.HasPrefix(f[0], name) && f[3] == "ns/op" {
			v, err := strconv.ParseFloat(f[2], 64)
			if err == nil {
				r.Runs = append(r.Runs, v)
			}
		}
	}
	if len(r.Runs) == 0 {
		return nil, fmt.Errorf("no ns/op in the output of go test -bench %s: %s", name, out)
	}
	s := slices.Clone(r.Runs)
	slices.Sort(s)
	r.NsPerOp = s[len(s)/2]
	return r, nil
}
