package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes"
)

// controlResult is the control-plane case: N durable queue routes
// rabbit1 -> rabbit2 added one at a time through the admin API, listed,
// scraped, the router restarted with them, then flushed.
type controlResult struct {
	Routes int `json:"routes"`
	Conns  int `json:"conns"` // connections per broker (brokers[].connections)
	// Add latency of one POST /api/v1/routes, seen by a sequential client.
	AddP50Ms   float64 `json:"add_p50_ms"`
	AddP99Ms   float64 `json:"add_p99_ms"`
	AddMaxMs   float64 `json:"add_max_ms"`
	AddSeconds float64 `json:"add_total_s"`
	// OperationalSeconds: from the first add until every route is
	// Operational (-1: not within the bound).
	OperationalSeconds float64 `json:"operational_s"`
	ListSeconds        float64 `json:"list_s"` // the whole list, as the CLI gets it
	ListBytes          int     `json:"list_bytes"`
	MetricsBytes       int     `json:"metrics_bytes"`
	MetricsSeries      int     `json:"metrics_series"`
	MetricsSeconds     float64 `json:"metrics_s"`
	// StartSeconds: a restart with the routes in the state file, from the
	// exec to every broker connected and every route listed;
	// StartOperationalSeconds: to every route Operational (-1: not within
	// the bound).
	StartSeconds            float64 `json:"start_s"`
	StartOperationalSeconds float64 `json:"start_operational_s"`
	// Where the start's time went: CPU of the router and of the two
	// broker processes from the exec to every route Operational.
	StartRouterCPU float64 `json:"start_router_cpu_s"`
	StartBrokerCPU float64 `json:"start_broker_cpu_s"`
	FlushSeconds   float64 `json:"flush_s"`
	FlushNote      string  `json:"flush_note,omitempty"`
	Error          string  `json:"error,omitempty"`
}

// controlFanout: the routes spread over this many source queues and as
// many destination exchanges (a route is a (queue, exchange) pair).
const controlFanout = 100

// controlOperationalBound bounds each wait for every route Operational.
const controlOperationalBound = 3 * time.Minute

func (b *bench) runControl(ctx context.Context, p pairDef) (*controlResult, error) {
	n := b.opt.Control
	res := &controlResult{Routes: n, Conns: max(1, (n+999)/1000)} // RabbitMQ: at most 2,047 sessions a connection
	base := b.id + ".cp"
	if err := declareControl(ctx, p, base); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	dir, err := os.MkdirTemp(b.opt.Tmp, "fedbench-control-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: best effort
	rp, err := startRouter(ctx, b.opt.Fedrouter, dir, res.Conns, p.Src, p.Dst)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rp != nil {
			rp.stop()
		}
	}()
	if err := b.controlAdd(ctx, rp, p, base, res); err != nil {
		return res, err
	}
	if err := controlRead(ctx, rp, res); err != nil {
		return res, err
	}
	rp.stop()
	brokers0 := brokerCPU(p)
	t0 := time.Now()
	if rp, err = restartRouter(ctx, b.opt.Fedrouter, rp, 10*time.Minute); err != nil {
		return res, fmt.Errorf("restart: %w", err)
	}
	if err := waitListed(ctx, rp.api, n, b.opt.Poll); err != nil {
		return res, fmt.Errorf("restart: %w", err)
	}
	res.StartSeconds = time.Since(t0).Seconds()
	res.StartOperationalSeconds = waitOperational(ctx, rp, n, t0)
	res.StartRouterCPU, _ = cpuSeconds(rp.pid()) // 0 if it cannot be read: a figure, not a check
	res.StartBrokerCPU = brokerCPU(p) - brokers0
	return res, controlFlush(ctx, rp, res, b.opt.Poll)
}

// brokerCPU is the CPU the pair's broker processes have used so far.
func brokerCPU(p pairDef) float64 {
	a, _ := cpuSeconds(p.Src.PID) // 0 if it cannot be read: a figure, not a check
	b, _ := cpuSeconds(p.Dst.PID)
	return a + b
}

// declareControl declares the source queues and destination exchanges.
func declareControl(ctx context.Context, p pairDef, base string) error {
	for k := 0; k < controlFanout; k++ {
		if err := p.Src.mgmt.DeclareQueue(ctx, fmt.Sprintf("%s.q%d", base, k), amqp.QueueArgs{Durable: true}); err != nil {
			return err
		}
		if err := p.Dst.mgmt.DeclareExchange(ctx, fmt.Sprintf("%s.x%d", base, k), "fanout", true); err != nil {
			return err
		}
	}
	return nil
}

// controlAdd adds the routes one at a time, timing each call.
func (b *bench) controlAdd(ctx context.Context, rp *routerProc, p pairDef, base string, res *controlResult) error {
	lat := make([]float64, 0, res.Routes)
	t0 := time.Now()
	for i := 0; i < res.Routes; i++ {
		spec := routes.Spec{Kind: routes.KindQueue, Src: p.Src.Name, Dest: p.Dst.Name, Durable: true,
			Queue: fmt.Sprintf("%s.q%d", base, i%controlFanout), Exchange: fmt.Sprintf("%s.x%d", base, i/controlFanout%controlFanout)}
		if i >= controlFanout*controlFanout {
			spec.Exchange += fmt.Sprintf(".%d", i) // beyond 10,000: a missing exchange, the route Failed, still counted
		}
		s := time.Now()
		if _, err := rp.addRoute(ctx, spec); err != nil {
			return fmt.Errorf("add route %d: %w", i, err)
		}
		lat = append(lat, float64(time.Since(s).Microseconds())/1000)
		if (i+1)%1000 == 0 {
			fmt.Fprintf(os.Stderr, "  %d routes added (%.1fs)\n", i+1, time.Since(t0).Seconds())
		}
	}
	res.AddSeconds = time.Since(t0).Seconds()
	slices.Sort(lat)
	res.AddP50Ms, res.AddP99Ms, res.AddMaxMs = percentile(lat, 0.50), percentile(lat, 0.99), lat[len(lat)-1]
	res.OperationalSeconds = waitOperational(ctx, rp, res.Routes, t0)
	return nil
}

// controlRead lists the routes and scrapes /metrics, timing both.
func controlRead(ctx context.Context, rp *routerProc, res *controlResult) error {
	t := time.Now()
	sts, err := rp.api.Routes(ctx)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	res.ListSeconds = time.Since(t).Seconds()
	if len(sts) != res.Routes {
		return fmt.Errorf("list: %d routes, want %d", len(sts), res.Routes)
	}
	if body, err := rp.get(ctx, "/api/v1/routes"); err == nil {
		res.ListBytes = len(body) // the whole list in one answer, as before paging
	}
	t = time.Now()
	body, err := rp.get(ctx, "/metrics")
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	res.MetricsSeconds = time.Since(t).Seconds()
	res.MetricsBytes = len(body)
	for _, l := range strings.Split(string(body), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			res.MetricsSeries++
		}
	}
	return nil
}

// controlFlush flushes the routes. A router that outlives its own write
// timeout (before the fix) is polled until its list is empty.
func controlFlush(ctx context.Context, rp *routerProc, res *controlResult, every time.Duration) error {
	slow, err := adminclient.New(rp.api.BaseURL(), adminclient.Options{Token: rp.token, Timeout: 30 * time.Minute})
	if err != nil {
		return err
	}
	defer slow.Close()
	t0 := time.Now()
	n, err := slow.FlushRoutes(ctx, "")
	if err != nil {
		res.FlushNote = fmt.Sprintf("the flush call failed after %.1fs (%v): polled the list until empty", time.Since(t0).Seconds(), err)
		if err := waitListed(ctx, slow, 0, time.Second); err != nil {
			return err
		}
	} else if n != res.Routes {
		return fmt.Errorf("flush deleted %d routes, want %d", n, res.Routes)
	}
	res.FlushSeconds = time.Since(t0).Seconds()
	return nil
}

// waitListed waits until the router lists exactly n routes.
func waitListed(ctx context.Context, api *adminclient.Client, n int, every time.Duration) error {
	return poll(ctx, every, 30*time.Minute, func() (bool, error) {
		sts, err := api.Routes(ctx)
		return err == nil && len(sts) == n, nil // errors: not up yet, ask again
	})
}

// waitOperational waits until n routes are Operational and returns the
// seconds since t0, or -1 past controlOperationalBound.
func waitOperational(ctx context.Context, rp *routerProc, n int, t0 time.Time) float64 {
	// Once a second, from /metrics' per-state count: listing every route
	// (as this did before 2026-12-03, 16:00) took a quarter to a half of
	// the router's CPU during a start, a cost of the bench, not the start.
	err := poll(ctx, time.Second, controlOperationalBound, func() (bool, error) {
		body, err := rp.get(ctx, "/metrics")
		if err != nil {
			return false, nil
		}
		return operationalCount(body) == n, nil
	})
	if err != nil {
		return -1
	}
	return time.Since(t0).Seconds()
}

// operationalCount reads fedrouter_routes{state="Operational"} from a
// /metrics answer (-1 when it is missing).
func operationalCount(metrics []byte) int {
	const series = `fedrouter_routes{state="Operational"} `
	for _, l := range strings.Split(string(metrics), "\n") {
		if v, ok := strings.CutPrefix(l, series); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1
			}
			return int(f)
		}
	}
	return -1
}

// get reads a path of the router's API with its token, as a scraper would.
func (r *routerProc) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.api.BaseURL()+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", path, resp.Status)
	}
	return body, err
}

func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// print adds the control-plane figures to the summary (a buffer: the
// summary is written in one write).
func (c *controlResult) print(w *bytes.Buffer) {
	if c.Error != "" {
		fmt.Fprintf(w, "control plane: FAILED: %s\n", c.Error)
		return
	}
	fmt.Fprintf(w, "control plane: %d durable routes (%d connections a broker)\n", c.Routes, c.Conns)
	fmt.Fprintf(w, "  add: p50 %.2f ms, p99 %.2f ms, max %.1f ms, all %.1f s; all Operational after %s\n", c.AddP50Ms, c.AddP99Ms, c.AddMaxMs, c.AddSeconds, secs(c.OperationalSeconds))
	fmt.Fprintf(w, "  list: %.2f s (%d bytes); /metrics: %d bytes, %d series, %.2f s\n", c.ListSeconds, c.ListBytes, c.MetricsBytes, c.MetricsSeries, c.MetricsSeconds)
	fmt.Fprintf(w, "  start with them durable: %.1f s to listed, %s to all Operational (CPU: router %.1f s, brokers %.1f s); flush: %.2f s %s\n",
		c.StartSeconds, secs(c.StartOperationalSeconds), c.StartRouterCPU, c.StartBrokerCPU, c.FlushSeconds, c.FlushNote)
}

func secs(s float64) string {
	if s < 0 {
		return fmt.Sprintf("not within %s", controlOperationalBound)
	}
	return fmt.Sprintf("%.1f s", s)
}
