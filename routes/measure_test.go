package routes_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// TestMeasureRouteDataPath (ROUTES_MEASURE=1; not a check, a
// measurement): the CPU per forwarded message of one queue route on the
// engine (ack 0, and ack 100: ranged settlement at the source),
// alternating in one run, medians of 3 (fedbench compares it with the
// raw go-amqp pipe and other routers).
// The source queue is filled before the clock starts; the clock stops
// when the route has forwarded everything (accepted by the destination).
// CPU is this test process's user + system time (getrusage): the route
// manager, its connections, and the test's polling, alike on both. ROUTES_MEASURE_KIND picks the route: "" a queue route to
// an exchange, "destqueue" one into a named queue (Spec.DestQueue),
// "deadletter" one with on_reject dead-letter (every message accepted:
// what the dead-letter queue costs on the way, the engine's copy of
// each message in flight); "dynamic" and "mesh" the routes with a
// per-message hook, "exchange" the mesh's route without one
// (measure_hook_test.go). ROUTES_MEASURE_ONLY picks
// the source broker, ROUTES_MEASURE_SIZE the message size.
func TestMeasureRouteDataPath(t *testing.T) {
	if os.Getenv("ROUTES_MEASURE") == "" {
		t.Skip("a measurement: set ROUTES_MEASURE=1")
	}
	for _, c := range []struct {
		src, dst string
		size, n  int
	}{
		{"rabbit1", "rabbit2", 256, 20000}, {"rabbit1", "rabbit2", 16 << 10, 5000},
		{"qpidd1", "qpidd2", 256, 20000}, {"qpidd1", "qpidd2", 16 << 10, 5000},
	} {
		if only := os.Getenv("ROUTES_MEASURE_ONLY"); only != "" && only != c.src {
			continue
		}
		if size := os.Getenv("ROUTES_MEASURE_SIZE"); size != "" && size != fmt.Sprint(c.size) {
			continue
		}
		t.Run(fmt.Sprintf("%s to %s %d B x %d", c.src, c.dst, c.size, c.n), func(t *testing.T) {
			brokertest.Require(t, c.src, c.dst)
			var eng, ack []figure
			for range 3 {
				eng = append(eng, measureRoute(t, routes.DataPathEngine, 0, c.src, c.dst, c.size, c.n))
				ack = append(ack, measureRoute(t, routes.DataPathEngine, 100, c.src, c.dst, c.size, c.n))
			}
			e, a := median(eng), median(ack)
			load, _ := os.ReadFile("/proc/loadavg")
			t.Logf("%s: engine %.0f msg/s %.1f µs/msg; engine ack 100 %.0f msg/s %.1f µs/msg; ack 100 / none: throughput x%.2f, CPU x%.2f (load %s)",
				t.Name(), e.rate, e.cpuUs, a.rate, a.cpuUs, a.rate/e.rate, a.cpuUs/e.cpuUs, string(load[:min(len(load), 14)]))
		})
	}
}

type figure struct{ rate, cpuUs float64 }

func median(fs []figure) figure {
	rates, cpus := make([]float64, len(fs)), make([]float64, len(fs))
	for i, f := range fs {
		rates[i], cpus[i] = f.rate, f.cpuUs
	}
	slices.Sort(rates)
	slices.Sort(cpus)
	return figure{rates[len(rates)/2], cpus[len(cpus)/2]}
}

func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureRoute forwards n messages of size bytes through one queue route
// on dataPath with --ack ack and returns its rate and CPU per message.
func measureRoute(t *testing.T, dataPath string, ack int, src, dst string, size, n int) figure {
	if kind := os.Getenv("ROUTES_MEASURE_KIND"); kind == "dynamic" || kind == "mesh" || kind == "exchange" {
		return measureHookRoute(t, kind, dataPath, ack, src, dst, size, n)
	}
	h := newHarnessOn(t, dataPath, src, dst)
	q, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareQueue(t, h.brokers[src].Config(), q)
	spec := routes.Spec{Kind: routes.KindQueue, Dest: dst, Src: src, Exchange: ex, Queue: q, Ack: ack}
	switch kind := os.Getenv("ROUTES_MEASURE_KIND"); kind {
	case "":
		brokertest.DeclareExchangeQueue(t, h.brokers[dst].Config(), ex, "fanout", dq, "")
	case "destqueue":
		brokertest.DeclareQueue(t, h.brokers[dst].Config(), dq)
		spec.Exchange, spec.DestQueue = "", dq
	case "deadletter":
		brokertest.DeclareExchangeQueue(t, h.brokers[dst].Config(), ex, "fanout", dq, "")
		dlq := brokertest.UniqueName(t, "dlq")
		brokertest.DeclareQueue(t, h.brokers[src].Config(), dlq)
		spec.OnReject, spec.DeadLetterQueue = routes.DeadLetter, dlq
	default:
		t.Fatalf("ROUTES_MEASURE_KIND %q: want destqueue, deadletter, dynamic, mesh or exchange", kind)
	}
	body := make([]byte, size)
	brokertest.SendAll(t, h.session(src), queueAddress(h.brokers[src], q), 500, n, func(int) *goamqp.Message {
		return &goamqp.Message{Data: [][]byte{body}}
	})
	return timeRoute(t, h, spec, dataPath, n)
}

// timeRoute adds spec to h (its source filled) and times it until it
// has forwarded n messages; the route is deleted after.
func timeRoute(t *testing.T, h *harness, spec routes.Spec, dataPath string, n int) figure {
	runtime.GC()
	cpu0, t0 := processCPU(t), time.Now()
	st := h.add(spec)
	h.waitDataPath(st.ID, dataPath) // not a run that went to go-amqp
	setup := time.Since(t0)
	brokertest.Eventually(t, 5*time.Minute, 20*time.Millisecond, func() error {
		if s, _ := h.m.Get(st.ID); s.Forwarded < uint64(n) {
			return fmt.Errorf("forwarded %d of %d (%s, %s)", s.Forwarded, n, s.State, s.LastError)
		}
		return nil
	})
	wall, used := time.Since(t0), processCPU(t)-cpu0
	if err := h.m.Delete(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	f := figure{rate: float64(n) / wall.Seconds(), cpuUs: float64(used.Microseconds()) / float64(n)}
	t.Logf("%s %s ack %d: %.0f msg/s, %.1f µs/msg (Operational after %s)", spec.Kind, dataPath, spec.Ack, f.rate, f.cpuUs, setup.Round(time.Millisecond))
	return f
}

// queueAddress is queue q's address at b.
func queueAddress(b brokertest.Broker, q string) string {
	if b.Kind == "rabbitmq" {
		return "/amq/queue/" + q
	}
	return q
}
