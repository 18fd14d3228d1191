package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// The qpidd pair: qpidd1 -> qpidd2 of testdata/qpidd.sh (both strict: an
// unknown address is amqp:not-found, so every queue and exchange a run
// uses is created through QMF first). The binaries are not in the
// repository: without the shared build the pair is left out of the
// default pairs, with a line saying so.

const (
	kindQpidd    = "qpidd"
	qpiddScript  = "testdata/qpidd.sh"
	qpiddSrc     = 1 // qpidd1, strict
	qpiddDst     = 2 // qpidd2, strict
	qpiddPortMin = 5900
	// qpiddQueueLimit is the byte limit of the run's queues (qpid.max_size).
	// qpidd's default, 100 MB with producer flow control from 80 %, stops
	// a 10,000 x 16 KiB fill at about 5,000 messages.
	qpiddQueueLimit = 1 << 30
)

// errNoQpidd is the shared qpidd build missing (qpidd.sh dir exit 3).
var errNoQpidd = errors.New("fedbench: no shared qpidd build found (bash " + qpiddScript + " dir)")

// qpiddAvailable runs `qpidd.sh dir`: nil when the shared build is there,
// errNoQpidd when it is absent, another error when the script fails
// otherwise (a wrong FEDROUTER_QPIDD_DIR).
func qpiddAvailable(ctx context.Context) error {
	if _, err := os.Stat(qpiddScript); err != nil { // not run from the repository's root
		return fmt.Errorf("%w: %w", errNoQpidd, err)
	}
	out, err := exec.CommandContext(ctx, "bash", qpiddScript, "dir").CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		return errNoQpidd
	default:
		return fmt.Errorf("bash %s dir: %w: %s", qpiddScript, err, strings.TrimSpace(string(out)))
	}
}

// defaultPairs drops qpidd from the default pairs when the shared build
// is absent (with the line that says so); a pair asked for explicitly is
// kept, and fails later if its brokers are missing.
func defaultPairs(pairs []string, explicit bool, avail error) ([]string, string, error) {
	if explicit || avail == nil {
		return pairs, "", nil
	}
	if !errors.Is(avail, errNoQpidd) {
		return nil, "", avail
	}
	var out []string
	for _, p := range pairs {
		if p != kindQpidd {
			out = append(out, p)
		}
	}
	return out, "qpidd: " + avail.Error() + ": the qpidd pair is skipped", nil
}

// qpiddBroker describes instance n of testdata/qpidd.sh, with its QMF
// client; it fails if the instance is not running.
func qpiddBroker(n int) (broker, error) {
	name := fmt.Sprintf("qpidd%d", n)
	pidFile := filepath.Join(os.TempDir(), "fedrouter-qpidd", strconv.Itoa(n), "qpidd.pid")
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return broker{}, fmt.Errorf("broker %s: %w (bash %s start %d)", name, err, qpiddScript, n)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return broker{}, fmt.Errorf("broker %s: pid file %s: %w", name, pidFile, err)
	}
	if _, err := cpuSeconds(pid); err != nil {
		return broker{}, fmt.Errorf("broker %s (pid %d) is not running: %w (bash %s start %d)", name, pid, err, qpiddScript, n)
	}
	b := broker{Name: name, Kind: kindQpidd, URL: fmt.Sprintf("amqp://127.0.0.1:%d", qpiddPortMin+n), PID: pid}
	if b.qmf, err = amqp.NewQpidManagement(brokerConfig(b)); err != nil {
		return broker{}, fmt.Errorf("broker %s: %w", name, err)
	}
	return b, nil
}

func qpiddPair() (pairDef, error) {
	src, err := qpiddBroker(qpiddSrc)
	if err != nil {
		return pairDef{}, err
	}
	dst, err := qpiddBroker(qpiddDst)
	if err != nil {
		return pairDef{}, err
	}
	return pairDef{Name: "qpidd->qpidd", Src: src, Dst: dst, QpidFed: true}, nil
}

// qpiddVersion is what the shared build's qpidd says of itself ("" if it
// cannot be asked).
func qpiddVersion(ctx context.Context) string {
	dir, err := exec.CommandContext(ctx, "bash", qpiddScript, "dir").Output()
	if err != nil {
		return ""
	}
	out, err := exec.CommandContext(ctx, filepath.Join(strings.TrimSpace(string(dir)), "bin", "qpidd"), "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "qpidd (qpid-cpp) version"))
}

// qpiddSetup creates a run's nodes on a qpidd pair: a durable queue per
// route at the source; at the destination a fanout exchange per route
// bound to a durable queue (a queue route delivers to an exchange). The
// queues may hold 1 GiB (qpiddQueueLimit).
func qpiddSetup(ctx context.Context, o runObjs) error {
	queueProps := map[string]any{"durable": true, "qpid.max_size": uint64(qpiddQueueLimit)}
	for _, q := range o.srcQ {
		if err := o.pair.Src.qmf.Create(ctx, "queue", q, queueProps); err != nil {
			return err
		}
	}
	m := o.pair.Dst.qmf
	for k := range o.dstX {
		if err := m.Create(ctx, "exchange", o.dstX[k], map[string]any{"exchange-type": "fanout", "durable": true}); err != nil {
			return err
		}
		if err := m.Create(ctx, "queue", o.dstQ[k], queueProps); err != nil {
			return err
		}
		if err := m.Create(ctx, "binding", o.dstX[k]+"/"+o.dstQ[k], map[string]any{}); err != nil {
			return err
		}
	}
	return nil
}

// qpiddCleanup removes a qpidd federation run's bridges and link (if any
// are left), checks that every destination queue holds its share and
// every source queue is empty, and deletes the run's nodes. It returns
// "ok" or what was wrong, as cleanup does. QMF's counts are current (no
// lag as in RabbitMQ's statistics); the wait is for acknowledgements
// still on their way.
func qpiddCleanup(ctx context.Context, o runObjs) string {
	var problems []string
	note := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	note(deleteFederation(ctx, o))
	note(waitDepths(ctx, o.pair.Dst, o.dstQ, o.per, 10*time.Second))
	note(waitDepths(ctx, o.pair.Src, o.srcQ, 0, 10*time.Second))
	for k := range o.dstQ {
		note(o.pair.Dst.qmf.Delete(ctx, "queue", o.dstQ[k]))
		note(o.pair.Dst.qmf.Delete(ctx, "exchange", o.dstX[k]))
	}
	for _, q := range o.srcQ {
		note(o.pair.Src.qmf.Delete(ctx, "queue", q))
	}
	if len(problems) > 0 {
		return strings.Join(problems, "; ")
	}
	return "ok"
}

// depths are the message counts (msgDepth) of a qpidd broker's queues, by
// name, from one QMF query.
func depths(ctx context.Context, b broker) (map[string]int64, error) {
	qs, err := b.qmf.Objects(ctx, "queue")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, q := range qs {
		if n, ok := qmfInt(q["msgDepth"]); ok {
			out[q.String("name")] = n
		}
	}
	return out, nil
}

// holding lists the queues of qs that do not hold want messages in d.
func holding(d map[string]int64, qs []string, want int) []string {
	var off []string
	for _, q := range qs {
		if n, ok := d[q]; !ok {
			off = append(off, q+" is missing")
		} else if n != int64(want) {
			off = append(off, fmt.Sprintf("%s holds %d", q, n))
		}
	}
	return off
}

// waitDepths polls until every queue of qs on b holds want messages, or
// timeout.
func waitDepths(ctx context.Context, b broker, qs []string, want int, timeout time.Duration) error {
	var off []string
	err := poll(ctx, 100*time.Millisecond, timeout, func() (bool, error) {
		d, err := depths(ctx, b)
		off = holding(d, qs, want)
		return len(off) == 0, err
	})
	if err != nil && ctx.Err() == nil && len(off) > 0 {
		return fmt.Errorf("on %s, want %d messages each: %s: %w", b.Name, want, strings.Join(off, ", "), err)
	}
	return err
}

// qmfInt reads a QMF integer, which arrives as whichever AMQP integer
// type the broker chose.
func qmfInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int8:
		return int64(n), true
	case uint64:
		return int64(n), n <= 1<<63-1
	case uint32:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint8:
		return int64(n), true
	}
	return 0, false
}

// qpiddKinds are the QMF classes a run creates objects of, in the order
// they can be deleted: bridges before their link, queues before the
// exchanges they are bound to.
var qpiddKinds = []string{"bridge", "link", "queue", "exchange"}

// sweepQpidd deletes what this run left on the qpidd brokers of pairs (a
// failed or interrupted run), and warns of what an earlier one left.
func (b *bench) sweepQpidd(ctx context.Context, pairs []pairDef) {
	for _, br := range qpiddNodes(pairs) {
		for _, class := range qpiddKinds {
			objs, err := br.qmf.Objects(ctx, class)
			if err != nil {
				fmt.Fprintf(os.Stderr, "warning: clean-up on %s: %v\n", br.Name, err)
				continue
			}
			for _, obj := range objs {
				n := obj.String("name")
				switch {
				case strings.HasPrefix(n, b.id+"."):
					if err := br.qmf.Delete(ctx, class, n); err != nil {
						fmt.Fprintf(os.Stderr, "warning: clean-up on %s: %v\n", br.Name, err)
					}
				case strings.HasPrefix(n, "fedbench."):
					fmt.Fprintf(os.Stderr, "warning: %s has %s %q from an earlier fedbench run; delete it if no fedbench runs\n", br.Name, class, n)
				}
			}
		}
	}
}

// qpiddNodes are the qpidd brokers of the pairs, each once.
func qpiddNodes(pairs []pairDef) []broker {
	return pairBrokers(pairs, func(b broker) bool { return b.qmf != nil })
}
