package engine_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
	"github.com/fedrouter/fedrouter/links"
)

// cpu is the process's user+system CPU time so far.
func cpu(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// figure is one measured run.
type figure struct {
	rate  float64 // msg/s
	cpuUs float64 // process CPU µs per message
}

// measure runs move over n messages and returns its throughput and the
// process's CPU per message.
func measure(t testing.TB, n int, move func()) figure {
	c0, t0 := cpu(t), time.Now()
	move()
	el, c := time.Since(t0), cpu(t)-c0
	return figure{rate: float64(n) / el.Seconds(), cpuUs: float64(c.Microseconds()) / float64(n)}
}

// TestMeasureForward forwards N 256-byte messages between two brokers of
// a kind with the engine's Forwarder and with a go-amqp receive → send →
// accept pipe (credit 2,000 each), alternating, and logs throughput and
// CPU per message for both and their ratio. It asserts no time: run it
// explicitly, ENGINE_MEASURE=1 go test -run TestMeasureForward -v
// (ENGINE_MEASURE_N, ENGINE_MEASURE_SIZE in bytes, ENGINE_MEASURE_PAIRS=qpidd
// for the qpidd pair alone).
func TestMeasureForward(t *testing.T) {
	if os.Getenv("ENGINE_MEASURE") == "" {
		t.Skip("a measurement: set ENGINE_MEASURE=1 and -run it")
	}
	n, size, reps := envInt(t, "ENGINE_MEASURE_N", 20000), envInt(t, "ENGINE_MEASURE_SIZE", 256), 3
	pairs := [][2]string{{"rabbit1", "rabbit2"}, {"qpidd1", "qpidd2"}}
	if os.Getenv("ENGINE_MEASURE_PAIRS") == "qpidd" {
		pairs = pairs[1:]
	}
	for _, pair := range pairs {
		t.Run(pair[0]+"-"+pair[1], func(t *testing.T) {
			bs := brokertest.Require(t, pair[0], pair[1])
			src, dst := bs[0], bs[1]
			var eng, pipe []figure
			for r := 0; r < reps; r++ {
				sa, da := queue(t, src), queue(t, dst)
				fill(t, src, sa, n, size)
				f := startForwardIdle(t, src, dst)
				eng = append(eng, measure(t, n, func() { f(sa, da, n) }))
				sa, da = queue(t, src), queue(t, dst)
				fill(t, src, sa, n, size)
				p := goamqpPipe(t, src, dst)
				pipe = append(pipe, measure(t, n, func() { p(sa, da, n) }))
				t.Logf("rep %d: engine %.0f msg/s %.1f µs/msg; go-amqp pipe %.0f msg/s %.1f µs/msg", r,
					eng[r].rate, eng[r].cpuUs, pipe[r].rate, pipe[r].cpuUs)
			}
			e, p := median(eng), median(pipe)
			t.Logf("%s→%s, %d × %d B, credit 2,000, medians of %d: engine %.0f msg/s, %.1f CPU µs/msg; go-amqp pipe %.0f msg/s, %.1f CPU µs/msg; throughput ×%.2f, CPU per message ×%.2f",
				src.Name, dst.Name, n, size, reps, e.rate, e.cpuUs, p.rate, p.cpuUs, e.rate/p.rate, e.cpuUs/p.cpuUs)
		})
	}
}

// envInt reads a positive integer setting, or def.
func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func median(fs []figure) figure {
	r := make([]float64, len(fs))
	c := make([]float64, len(fs))
	for i, f := range fs {
		r[i], c[i] = f.rate, f.cpuUs
	}
	sort.Float64s(r)
	sort.Float64s(c)
	return figure{rate: r[len(r)/2], cpuUs: c[len(c)/2]}
}

// startForwardIdle dials both brokers now (outside the measurement) and
// returns what forwards n messages from one address to another.
func startForwardIdle(t testing.TB, src, dst brokertest.Broker) func(sa, da string, n int) {
	return startForwardIdleWith(t, src, dst, "", func() engine.ForwardOptions { return engine.ForwardOptions{} })
}

// startForwardIdleWith is startForwardIdle with each forwarder's options
// from fo.
func startForwardIdleWith(t testing.TB, src, dst brokertest.Broker, subject string, fo func() engine.ForwardOptions) func(sa, da string, n int) {
	ss := session(t, dial(t, src, engine.Options{}), engine.SessionOptions{})
	ds := session(t, dial(t, dst, engine.Options{}), engine.SessionOptions{})
	return func(sa, da string, n int) {
		f, r, s, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: sa, Credit: 2000},
			ds, engine.SenderOptions{Address: da, Subject: subject}, fo())
		if err != nil {
			t.Fatal(err)
		}
		waitSettled(t, f, uint64(n), 2*time.Minute)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_ = r.Close(ctx) // RabbitMQ may not answer a closing detach in kind
		_ = s.Close(ctx)
	}
}

// goamqpPipe is the baseline: go-amqp receives with manual credit (half
// the window granted once the last grant is used and the window allows,
// as fedbench's raw pipe), sends each message with a receipt, and a
// second goroutine accepts each at the source once the destination
// accepted it, in order.
func goamqpPipe(t testing.TB, src, dst brokertest.Broker) func(sa, da string, n int) {
	ss, ds := goamqpConn(t, src), goamqpConn(t, dst)
	const credit = 2000
	return func(sa, da string, n int) {
		ctx := t.Context()
		rcv, err := ss.NewReceiver(ctx, sa, &goamqp.ReceiverOptions{Credit: -1})
		if err != nil {
			t.Fatal(err)
		}
		snd, err := ds.NewSender(ctx, da, nil)
		if err != nil {
			t.Fatal(err)
		}
		type sent struct {
			m *goamqp.Message
			r goamqp.SendReceipt
		}
		q := make(chan sent, credit)
		var settled atomic.Int64
		notify := make(chan struct{}, 1)
		errc := make(chan error, 1)
		go func() {
			for i := 0; i < n; i++ {
				s := <-q
				if _, err := s.r.Wait(ctx); err != nil {
					errc <- err
					return
				}
				if err := rcv.AcceptMessage(ctx, s.m); err != nil {
					errc <- err
					return
				}
				settled.Add(1)
				select {
				case notify <- struct{}{}:
				default:
				}
			}
			errc <- nil
		}()
		left := 0
		for received := 0; received < n; received++ {
			if left <= 0 {
				for int64(received)-settled.Load()+credit/2 > credit {
					<-notify
				}
				if err := rcv.IssueCredit(credit / 2); err != nil {
					t.Fatal(err)
				}
				left = credit / 2
			}
			m, err := rcv.Receive(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			left--
			r, err := snd.SendWithReceipt(ctx, m, nil)
			if err != nil {
				t.Fatal(err)
			}
			q <- sent{m, r}
		}
		if err := <-errc; err != nil {
			t.Fatal(fmt.Errorf("pipe: %w", err))
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_ = rcv.Close(cctx)
		_ = snd.Close(cctx)
	}
}

// BenchmarkForward forwards b.N 256-byte messages qpidd1 → qpidd2 with
// the engine (filled before the clock starts): ns/op and allocs/op are
// per forwarded message, everything in this process counted.
func BenchmarkForward(b *testing.B) {
	benchmarkForward(b, "", func() engine.ForwardOptions { return engine.ForwardOptions{} })
}

// BenchmarkForwardSubject is BenchmarkForward with a subject set on
// every message by the destination's sender (qpidd's literal key; the
// destination here is a queue, which keeps it): every message's
// properties rewritten (TrySendRewritten).
func BenchmarkForwardSubject(b *testing.B) {
	benchmarkForward(b, "news.eu", func() engine.ForwardOptions { return engine.ForwardOptions{} })
}

// BenchmarkForwardTraceRewrite is BenchmarkForward with a per-message
// hook as a route's (routes/enginehook.go): the trace read with
// links.ReadHop and written back with the source broker added, in
// buffers reused from message to message; every message is rewritten
// (TrySendRewritten).
func BenchmarkForwardTraceRewrite(b *testing.B) {
	benchmarkForward(b, "", func() engine.ForwardOptions { return engine.ForwardOptions{Rewrite: traceRewrite("qpidd1")} })
}

func benchmarkForward(b *testing.B, subject string, fo func() engine.ForwardOptions) {
	bs := brokertest.Require(b, "qpidd1", "qpidd2")
	src, dst := bs[0], bs[1]
	sa, da := queue(b, src), queue(b, dst)
	n := b.N
	fill(b, src, sa, n, 256)
	fwd := startForwardIdleWith(b, src, dst, subject, fo)
	b.ReportAllocs()
	b.ResetTimer()
	fwd(sa, da, n)
	b.StopTimer()
}

// traceRewrite adds broker to each message's trace, as a route's hook
// does, reusing its buffers (a trace it cannot read is left as it is).
func traceRewrite(broker string) func(payload []byte, s *wire.Sections) []wire.Annotated {
	var scratch, value []byte
	set := make([]wire.Annotated, 1)
	return func(payload []byte, s *wire.Sections) []wire.Annotated {
		hop, err := links.ReadHop(payload, s)
		if err != nil {
			return nil
		}
		value, scratch = links.AppendTraceValue(value[:0], scratch, hop.Trace, broker)
		set[0] = wire.Annotated{Key: links.AnnotationTrace, Value: value}
		return set
	}
}
