package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/fedrouter/fedrouter/routes"
)

// backlogResult is the memory-under-backlog case on the engine: a
// large backlog at the source, one route draining it, the router's RSS
// sampled as it goes.
type backlogResult struct {
	DataPath     string      `json:"data_path"` // routes.DataPath*: the one the route was checked to run on
	Messages     int         `json:"messages"`
	Size         int         `json:"size_bytes"`
	FillSeconds  float64     `json:"fill_seconds"`
	DrainSeconds float64     `json:"drain_seconds"`
	Rate         float64     `json:"msgs_per_s"`
	IdleKiB      int64       `json:"rss_idle_kib"` // connected, before the route was added
	RSSMinKiB    int64       `json:"rss_min_kib"`  // over the samples while draining
	RSSMaxKiB    int64       `json:"rss_max_kib"`
	RSSFinalKiB  int64       `json:"rss_final_kib"`
	PeakKiB      int64       `json:"peak_kib"` // VmHWM at the end
	Samples      []rssSample `json:"samples"`
	Verified     string      `json:"verified"`
	Error        string      `json:"error,omitempty"`
}

type rssSample struct {
	T         float64 `json:"t_s"`
	Forwarded uint64  `json:"forwarded"`
	RSSKiB    int64   `json:"rss_kib"`
}

const rssEvery = 500 * time.Millisecond

// runBacklogs runs the backlog case once per data path of
// --backlog-data-path (the engine: one run); a failed one is recorded
// with its error.
func (b *bench) runBacklogs(ctx context.Context, p pairDef, start time.Time) ([]*backlogResult, error) {
	var out []*backlogResult
	for _, path := range b.opt.BacklogPaths {
		fmt.Fprintf(os.Stderr, "[%s] backlog on %s: %d messages ...\n", time.Since(start).Round(time.Second), path, b.opt.Backlog)
		bl, err := b.runBacklog(ctx, p, path)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			fmt.Fprintf(os.Stderr, "backlog on %s FAILED: %v\n", path, err)
			bl = &backlogResult{DataPath: path, Error: err.Error()}
		}
		out = append(out, bl)
	}
	return out, nil
}

// backlogDataPaths checks --backlog-data-path: the engine, once. go-amqp,
// which the backlog also drained on before 2026-12-05, is refused by name.
func backlogDataPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		switch {
		case p == "go-amqp":
			return nil, fmt.Errorf("--backlog-data-path %q: the go-amqp data path was removed on 2026-12-05 (every route runs on the engine): want %s", p, routes.DataPathEngine)
		case p != routes.DataPathEngine:
			return nil, fmt.Errorf("--backlog-data-path %q: want %s", p, routes.DataPathEngine)
		case !slices.Contains(out, p):
			out = append(out, p)
		}
	}
	return out, nil
}

func (b *bench) runBacklog(ctx context.Context, p pairDef, dataPath string) (*backlogResult, error) {
	const size = 256
	c := caseSpec{Pair: p.Name, Size: size, Variant: vEngine, Routes: 1, Messages: b.opt.Backlog}
	o := b.objects(c, p)
	res := &backlogResult{DataPath: dataPath, Messages: c.Messages, Size: size, Verified: "pending"}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res.Verified = b.cleanup(cctx, o)
	}()
	t0 := time.Now()
	if err := b.setup(ctx, o, size); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	res.FillSeconds = time.Since(t0).Seconds()
	dir, err := os.MkdirTemp(b.opt.Tmp, "fedbench-router-")
	if err != nil {
		return nil, err
	}
	rp, err := startRouterSpec(ctx, b.opt.Fedrouter, dir, routerSpec{Conns: 1, DataPath: dataPath, Brokers: []broker{p.Src, p.Dst}})
	if err != nil {
		return nil, err
	}
	defer rp.stop()
	if res.IdleKiB, _, err = memKiB(rp.pid()); err != nil {
		return nil, err
	}
	t0 = time.Now()
	id, err := rp.addRoute(ctx, routes.Spec{Kind: routes.KindQueue, Src: p.Src.Name, Dest: p.Dst.Name,
		Exchange: o.dstX[0], Queue: o.srcQ[0], Credit: b.opt.Credit})
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{id: true}
	var last time.Time
	err = poll(ctx, b.opt.Poll, b.timeout(c.Messages), func() (bool, error) {
		n, err := rp.forwarded(ctx, ids)
		if err != nil {
			return false, err
		}
		done := n >= uint64(c.Messages)
		if now := time.Now(); done || now.Sub(last) >= rssEvery {
			last = now
			rss, _, err := memKiB(rp.pid())
			if err != nil {
				return false, err
			}
			res.Samples = append(res.Samples, rssSample{T: now.Sub(t0).Seconds(), Forwarded: n, RSSKiB: rss})
		}
		return done, nil
	})
	if err != nil {
		return nil, fmt.Errorf("fedrouter (log %s): %w", rp.log, err)
	}
	res.DrainSeconds = time.Since(t0).Seconds()
	sts, err := rp.statuses(ctx, ids)
	if err != nil {
		return nil, err
	}
	if err := checkOnEngine(sts); err != nil {
		return nil, fmt.Errorf("fedrouter (log %s): %w", rp.log, err)
	}
	res.Rate = float64(c.Messages) / res.DrainSeconds
	if _, res.PeakKiB, err = memKiB(rp.pid()); err != nil {
		return nil, err
	}
	res.RSSMinKiB = -1
	for _, s := range res.Samples {
		if s.Forwarded == 0 {
			continue // not draining yet
		}
		if res.RSSMinKiB < 0 || s.RSSKiB < res.RSSMinKiB {
			res.RSSMinKiB = s.RSSKiB
		}
		res.RSSMaxKiB = max(res.RSSMaxKiB, s.RSSKiB)
		res.RSSFinalKiB = s.RSSKiB
	}
	rp.stop()
	return res, os.RemoveAll(dir)
}
