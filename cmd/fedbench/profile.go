package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// `fedbench profile` runs what one run of a queue route runs — fedrouter's
// amqp.Receiver (manual credit), links.Forward, a go-amqp sender, each
// route's sessions of its own — in this process, under the CPU profiler,
// from the moment the source is full until every message is forwarded,
// and says where the forwarder waited. fedrouter serves no pprof endpoint;
// this is how the hot path was profiled (docs/performance.md).

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:  "profile",
		Usage: "profile fedrouter's forwarding path in-process (one queue route)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "pair", Value: "rabbitmq", Usage: "rabbitmq or proton"},
			&cli.IntFlag{Name: "n", Value: 100000, Usage: "messages"},
			&cli.IntFlag{Name: "size", Value: 256, Usage: "message size in bytes"},
			&cli.IntFlag{Name: "credit", Value: routes.DefaultCredit, Usage: "route credit"},
			&cli.IntFlag{Name: "routes", Value: 1, Usage: "routes at once, sharing one connection per broker as in fedrouter"},
			&cli.StringFlag{Name: "cpuprofile", Value: "cpu.pprof", Usage: "write the CPU profile to `FILE`"},
			&cli.StringFlag{Name: "memprofile", Usage: "write the allocation profile of the forwarding to `FILE`"},
		},
		Action: runProfile,
	}
}

func runProfile(c *cli.Context) error {
	ctx := c.Context
	b := &bench{opt: options{Credit: c.Int("credit"), Pairs: []string{c.String("pair")}},
		id: fmt.Sprintf("fedbench.%x", time.Now().UnixNano()&0xffffffff)}
	pairs, err := b.pairs()
	if err != nil {
		return err
	}
	defer b.sweep(pairs)
	routes := max(1, c.Int("routes"))
	cs := caseSpec{Pair: pairs[0].Name, Size: c.Int("size"), Variant: vFedrouter, Routes: routes, Messages: c.Int("n") / routes * routes}
	o := b.objects(cs, pairs[0])
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		fmt.Fprintln(os.Stderr, "check and clean-up:", b.cleanup(cctx, o))
	}()
	if err := b.setup(ctx, o, cs.Size); err != nil {
		return err
	}
	rt, err := openRoute(ctx, o, b.opt.Credit)
	if err != nil {
		return err
	}
	defer rt.close()
	f, err := os.Create(c.String("cpuprofile"))
	if err != nil {
		return err
	}
	defer closeProfile(f)
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	allocs := startAllocProfile(c.String("memprofile"))
	ws := amqp.ReadWriteStats()
	st, err := rt.forward(ctx, cs.Messages)
	pprof.StopCPUProfile()
	allocs.stop()
	if err != nil {
		return err
	}
	st.print(cs, c.String("cpuprofile"))
	printWriteStats(ws, cs.Messages)
	return nil
}

// profRoute is the routes' links, opened as routes/route.go's runOnce
// opens them: one connection per broker, a session per side and route, the
// profiles' addresses, receiver window credit/2, at most credit unsettled.
type profRoute struct {
	src, dst *amqp.Conn
	links    []*profLink
	credit   int
}

type profLink struct {
	ss, ds *amqp.Session
	rcv    *amqp.Receiver
	snd    *amqp.Sender
}

func brokerConfig(b broker) amqp.BrokerConfig {
	c := amqp.BrokerConfig{Name: b.Name, URLs: []string{b.URL}, Profile: b.profile()}
	if b.Kind == "rabbitmq" {
		c.Username, c.Password = "guest", "guest"
		c.Management.URL = b.Mgmt
	}
	return c
}

func openRoute(ctx context.Context, o runObjs, credit int) (_ *profRoute, err error) {
	rt := &profRoute{credit: credit}
	defer func() {
		if err != nil {
			rt.close()
		}
	}()
	if rt.src, err = amqp.Dial(ctx, brokerConfig(o.pair.Src), amqp.ConnOptions{}); err != nil {
		return nil, err
	}
	if rt.dst, err = amqp.Dial(ctx, brokerConfig(o.pair.Dst), amqp.ConnOptions{}); err != nil {
		return nil, err
	}
	prof, err := amqp.NewProfile(brokerConfig(o.pair.Dst))
	if err != nil {
		return nil, err
	}
	defer prof.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for k := range o.srcQ {
		l := &profLink{}
		rt.links = append(rt.links, l)
		if l.ss, _, err = rt.src.NewSession(ctx); err != nil {
			return nil, err
		}
		if l.ds, _, err = rt.dst.NewSession(ctx); err != nil {
			return nil, err
		}
		tgt, err := prof.Target(amqp.Node{Kind: amqp.Exchange, Name: o.dstX[k]})
		if err != nil {
			return nil, err
		}
		if l.snd, err = l.ds.NewSender(ctx, tgt); err != nil {
			return nil, err
		}
		if l.rcv, err = amqp.NewReceiver(ctx, l.ss, amqp.LinkSpec{Address: queueAddr(o.pair.Src, o.srcQ[k])},
			amqp.ReceiverConfig{Window: max(1, credit/2), MaxUnsettled: credit}); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

func (rt *profRoute) close() {
	for _, l := range rt.links {
		for _, s := range []*amqp.Session{l.ss, l.ds} {
			if s != nil {
				amqp.CloseSession(s)
			}
		}
	}
	for _, c := range []*amqp.Conn{rt.src, rt.dst} {
		if c != nil {
			_ = c.Close() // always nil
		}
	}
}

// profStats is what one profiled run measured.
type profStats struct {
	elapsed   time.Duration
	cpu       float64      // this process, seconds
	src       *timedSource // the first route's
	snk       *timedSink
	samples   int64
	inFlight  int64 // sums over the samples
	unsettled int64
	credit    int64
	window    int
}

// forward runs links.Forward on every route until n messages are
// forwarded in all, sampling every millisecond where the first route's
// window sits: sent and waiting for the destination (in flight), received
// and unsettled at the source, or credit not yet used at the source.
func (rt *profRoute) forward(ctx context.Context, n int) (*profStats, error) {
	first := rt.links[0]
	st := &profStats{window: rt.credit, src: &timedSource{Receiver: first.rcv}, snk: &timedSink{sink: links.SenderSink{S: first.snd}}}
	cpu0, err := cpuSeconds(os.Getpid())
	if err != nil {
		return nil, err
	}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	counters := make([]links.Counters, len(rt.links))
	fwdErr := make(chan error, len(rt.links))
	cfg := links.Config{Window: rt.credit, OutcomeTimeout: 30 * time.Second}
	t0 := time.Now()
	for i, l := range rt.links {
		var src links.Source = l.rcv
		var snk links.Sink = links.SenderSink{S: l.snd}
		if i == 0 {
			src, snk = st.src, st.snk
		}
		go func() { fwdErr <- links.Forward(fctx, src, snk, cfg, &counters[i]) }() // joined below
	}
	joined := 0
	err = poll(ctx, time.Millisecond, 10*time.Minute, func() (bool, error) {
		select {
		case err := <-fwdErr:
			joined++
			return false, fmt.Errorf("forward ended: %w", err)
		default:
		}
		rs := first.rcv.Stats()
		st.samples++
		st.inFlight += counters[0].InFlight.Load()
		st.unsettled += rs.Unsettled
		st.credit += rs.Credit
		var sum uint64
		for i := range counters {
			sum += counters[i].Forwarded.Load()
		}
		return sum >= uint64(n), nil
	})
	st.elapsed = time.Since(t0)
	cpu1, cerr := cpuSeconds(os.Getpid())
	stop()
	for ; joined < len(rt.links); joined++ {
		if ferr := <-fwdErr; ferr != nil && !errors.Is(ferr, context.Canceled) && err == nil {
			err = fmt.Errorf("forward ended: %w", ferr)
		}
	}
	if err != nil {
		return nil, err
	}
	st.cpu = cpu1 - cpu0
	return st, cerr
}

func (st *profStats) print(cs caseSpec, profile string) {
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / st.elapsed.Seconds() }
	s := st.src
	fmt.Printf("%d messages of %d bytes in %.2fs: %.0f msg/s, %.2f CPU s/100k; profile in %s\n", cs.Messages, cs.Size,
		st.elapsed.Seconds(), float64(cs.Messages)/st.elapsed.Seconds(), st.cpu/float64(cs.Messages)*1e5, profile)
	fmt.Printf("time in Receive (waiting for the source) %.0f%%, in Send %.0f%%, in Accept %.0f%%\n",
		pct(time.Duration(s.recv.Load())), pct(time.Duration(st.snk.send.Load())), pct(time.Duration(s.accept.Load())))
	fmt.Printf("receives that issued a credit grant: %d, %.2fs in all (%.1f ms each)\n", s.grants.Load(),
		time.Duration(s.grantWait.Load()).Seconds(), time.Duration(s.grantWait.Load()).Seconds()*1e3/float64(max(1, s.grants.Load())))
	if st.samples > 0 {
		f := float64(st.samples)
		fmt.Printf("mean over %d samples: in flight to the destination %.0f, unsettled at the source %.0f, credit left at the source %.0f (window %d)\n",
			st.samples, float64(st.inFlight)/f, float64(st.unsettled)/f, float64(st.credit)/f, st.window)
	}
}

// timedSource and timedSink add up the time the forwarder spends in each
// call (atomics: Forward calls them from several goroutines).
type timedSource struct {
	*amqp.Receiver
	recv, accept, grantWait atomic.Int64 // nanoseconds
	grants                  atomic.Int64
}

func (t *timedSource) Receive(ctx context.Context) (amqp.Message, error) {
	// Credit used up: this Receive issues the next grant and then waits
	// for the broker's first delivery on it.
	granting := t.Receiver.Stats().Credit <= 0
	t0 := time.Now()
	m, err := t.Receiver.Receive(ctx)
	d := int64(time.Since(t0))
	t.recv.Add(d)
	if granting {
		t.grants.Add(1)
		t.grantWait.Add(d)
	}
	return m, err
}

func (t *timedSource) Accept(ctx context.Context, m amqp.Message) error {
	t0 := time.Now()
	err := t.Receiver.Accept(ctx, m)
	t.accept.Add(int64(time.Since(t0)))
	return err
}

type timedSink struct {
	sink links.Sink
	send atomic.Int64 // nanoseconds
}

func (t *timedSink) Send(ctx context.Context, m amqp.Message) (links.Receipt, error) {
	t0 := time.Now()
	r, err := t.sink.Send(ctx, m)
	t.send.Add(int64(time.Since(t0)))
	return r, err
}

// closeProfile closes a CPU profile file, saying so when it could not: the
// profile on disk may then be cut short.
func closeProfile(f *os.File) {
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "fedbench: closing the CPU profile %s: %v (it may be incomplete)\n", f.Name(), err)
	}
}
