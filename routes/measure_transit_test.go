package routes_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/links"
)

// TestMeasureTransitHop (ROUTES_MEASURE=1; a measurement, not a check):
// the CPU per message of one transit hop — a transit queue's forwarder
// reading each message's transit header, counting the hop and
// delivering it into the address it names at the next broker — on the
// engine (links.EngineDispatch), medians of 3. The source is a queue of the test's own
// (the forwarder does not care what its queue is called: no shared
// transit queue is touched), filled before the clock starts; the clock
// stops when n are settled. CPU is this process's (getrusage).
func TestMeasureTransitHop(t *testing.T) {
	if os.Getenv("ROUTES_MEASURE") == "" {
		t.Skip("a measurement: set ROUTES_MEASURE=1")
	}
	for _, c := range []struct {
		src, dst string
		size, n  int
	}{
		{"qpidd1", "qpidd2", 256, 20000}, {"rabbit1", "rabbit2", 256, 20000}, {"qpidd1", "qpidd2", 16 << 10, 5000},
	} {
		if only := os.Getenv("ROUTES_MEASURE_ONLY"); only != "" && only != c.src {
			continue
		}
		t.Run(fmt.Sprintf("%s to %s %d B x %d", c.src, c.dst, c.size, c.n), func(t *testing.T) {
			brokertest.Require(t, c.src, c.dst)
			var eng []figure
			for range 3 {
				eng = append(eng, measureHop(t, c.src, c.dst, c.size, c.n))
			}
			e := median(eng)
			load, _ := os.ReadFile("/proc/loadavg")
			t.Logf("%s: engine %.0f msg/s %.1f µs/msg (load %s)", t.Name(), e.rate, e.cpuUs, string(load[:min(len(load), 14)]))
		})
	}
}

// measureHop forwards n messages in transit for dst, from a queue at
// src into a queue at dst, as the last hop of their journey.
func measureHop(t *testing.T, src, dst string, size, n int) figure {
	bs := map[string]brokertest.Broker{}
	for _, b := range brokertest.Require(t, src, dst) {
		bs[b.Name] = b
	}
	q, dq := brokertest.UniqueName(t, "h-engcore-hop"), brokertest.UniqueName(t, "h-engcore-dq")
	brokertest.DeclareQueue(t, bs[src].Config(), q)
	brokertest.DeclareQueue(t, bs[dst].Config(), dq)
	opts := famqp.ConnOptions{Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second}}
	sc, dc := brokertest.Dial(t, bs[src].Config(), opts), brokertest.Dial(t, bs[dst].Config(), opts)
	sp, dp := brokertest.Profile(t, bs[src].Config()), brokertest.Profile(t, bs[dst].Config())
	ctx := t.Context()
	ss, _, err := sc.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, size)
	brokertest.SendAll(t, ss, queueAddress(bs[src], q), 500, n, func(int) *goamqp.Message {
		return &goamqp.Message{Data: [][]byte{body}, Annotations: goamqp.Annotations{
			links.AnnotationDestBroker: dst, links.AnnotationDestAddress: "queue:" + dq, links.AnnotationOrigin: "elsewhere",
			links.AnnotationHops: int64(1), links.AnnotationTrace: "elsewhere"}}
	})
	spec, err := sp.Source(ctx, famqp.Node{Kind: famqp.Queue, Name: q}, famqp.Subscription{})
	if err != nil {
		t.Fatal(err)
	}
	const window = 500
	cfg := links.Config{Window: window, OutcomeTimeout: time.Minute, Limit: n}
	var c links.Counters
	runtime.GC()
	cpu0, t0 := processCPU(t), time.Now()
	err = engineHop(ctx, sc, dc, spec, sp, dp, src, dst, cfg, &c)
	wall, used := time.Since(t0), processCPU(t)-cpu0
	if err != nil {
		t.Fatal(err)
	}
	if c.Forwarded.Load() != uint64(n) {
		t.Fatalf("forwarded %d of %d (rejected %d, redelivered %d)", c.Forwarded.Load(), n, c.Rejected.Load(), c.Redelivered.Load())
	}
	f := figure{rate: float64(n) / wall.Seconds(), cpuUs: float64(used.Microseconds()) / float64(n)}
	t.Logf("engine: %.0f msg/s, %.1f µs/msg", f.rate, f.cpuUs)
	return f
}

func engineHop(ctx context.Context, sc, dc *famqp.Conn, spec famqp.LinkSpec, sp, dp famqp.Profile, src, dst string, cfg links.Config, c *links.Counters) error {
	var l links.EngineLinks
	var err error
	if l.Source, err = spec.EngineReceiver(sp); err != nil {
		return err
	}
	se, err := sc.Engine(ctx)
	if err != nil {
		return err
	}
	de, err := dc.Engine(ctx)
	if err != nil {
		return err
	}
	if l.Src, err = se.NewSession(ctx, engine.SessionOptions{}); err != nil {
		return err
	}
	ds, err := de.NewSession(ctx, engine.SessionOptions{})
	if err != nil {
		return err
	}
	defer func() { _ = l.Src.End(ctx); _ = ds.End(ctx) }() // ended with the test's connections anyway
	disp := &links.EngineDispatch{At: dst, From: src, Only: dst, MaxHops: links.DefaultMaxHops}
	l.Dispatch, l.Resolve = disp.Dispatch, links.EngineResolver(dst, ds, dp)
	fw, err := links.AttachEngine(ctx, l, cfg, 0)
	if err != nil {
		return err
	}
	defer fw.Close(ctx)
	return fw.Run(ctx, cfg, c)
}
