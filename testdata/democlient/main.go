// Command democlient is the client side of `make demo` (testdata/demo.sh):
// it declares RabbitMQ objects through the management HTTP API, publishes
// numbered messages and counts what arrives. It is written in Go, not
// Python or curl, so the demo needs nothing beyond Go and the brokers.
//
//	democlient queue    MGMT_URL NAME                delete and declare a durable queue (empty, no bindings)
//	democlient delete   MGMT_URL NAME                delete a queue if it exists
//	democlient exchange MGMT_URL NAME TYPE           declare a durable exchange (kept if it exists)
//	democlient bind     MGMT_URL EXCHANGE QUEUE KEY  bind QUEUE to EXCHANGE with KEY
//	democlient forget-fanout MGMT_URL EXCHANGE KEY   delete the shared queue of the fan-out group of
//	                                                 EXCHANGE and KEY (what an earlier run left in it)
//	democlient publish  AMQP_URL ADDRESS N LABEL     send N messages, each must be accepted
//	democlient expect   AMQP_URL ADDRESS N LABEL TIMEOUT
//	                                                 receive until N distinct LABEL messages arrived;
//	                                                 fail after TIMEOUT or if other messages arrive
//	democlient drain    AMQP_URL ADDRESS             receive and discard until the address is idle
//	democlient proxy    TARGET ADDR_FILE             a TCP proxy to TARGET (host:port) that writes its
//	                                                 own host:port to ADDR_FILE; SIGUSR1 cuts the path,
//	                                                 SIGUSR2 heals it, SIGTERM ends it
//
// expect also says by which path the messages came, from their
// x-fedrouter-trace annotation (multi-hop delivery).
//
// MGMT_URL is http://user:pass@host:port. AMQP_URL carries user:pass for
// SASL PLAIN; without them SASL ANONYMOUS is used (the Proton brokers).
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

func main() {
	// The root of every command's context; each bounds its own work with a
	// timeout derived from it.
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "democlient:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: democlient queue|exchange|bind|publish|expect|drain ... (see the package comment)")
	}
	want := map[string]int{"queue": 2, "delete": 2, "exchange": 3, "bind": 4, "forget-fanout": 3, "publish": 4, "expect": 5, "drain": 2, "proxy": 2}
	n, ok := want[args[0]]
	if !ok {
		return fmt.Errorf("unknown command %q", args[0])
	}
	if len(args)-1 != n {
		return fmt.Errorf("%s: want %d arguments, got %d", args[0], n, len(args)-1)
	}
	a := args[1:]
	switch args[0] {
	case "queue":
		return declareQueue(ctx, a[0], a[1])
	case "delete":
		err := mgmt(ctx, http.MethodDelete, a[0], "/api/queues/%2F/"+url.PathEscape(a[1]), "")
		if errors.Is(err, errNotFound) {
			return nil
		}
		return err
	case "exchange":
		return mgmt(ctx, http.MethodPut, a[0], "/api/exchanges/%2F/"+url.PathEscape(a[1]), fmt.Sprintf(`{"type":%q,"durable":true}`, a[2]))
	case "forget-fanout":
		name := routes.FanoutPrefix + a[1] + "." + routes.ExchangeEdge{Exchange: a[1], Key: a[2]}.Group()
		if err := mgmt(ctx, http.MethodDelete, a[0], "/api/queues/%2F/"+url.PathEscape(name), ""); err != nil && !errors.Is(err, errNotFound) {
			return err
		}
		return nil
	case "bind":
		return mgmt(ctx, http.MethodPost, a[0], "/api/bindings/%2F/e/"+url.PathEscape(a[1])+"/q/"+url.PathEscape(a[2]), fmt.Sprintf(`{"routing_key":%q}`, a[3]))
	case "publish":
		count, err := strconv.Atoi(a[2])
		if err != nil {
			return fmt.Errorf("publish: N %q: %w", a[2], err)
		}
		return publish(ctx, a[0], a[1], count, a[3])
	case "expect":
		count, err := strconv.Atoi(a[2])
		if err != nil {
			return fmt.Errorf("expect: N %q: %w", a[2], err)
		}
		timeout, err := time.ParseDuration(a[4])
		if err != nil {
			return fmt.Errorf("expect: TIMEOUT %q: %w", a[4], err)
		}
		return expect(ctx, a[0], a[1], count, a[3], timeout)
	case "proxy":
		return proxy(a[0], a[1])
	default: // drain
		return drain(ctx, a[0], a[1])
	}
}

// declareQueue deletes the queue (messages and bindings of an earlier run
// go with it) and declares it again, so every demo run counts from zero.
func declareQueue(ctx context.Context, base, name string) error {
	path := "/api/queues/%2F/" + url.PathEscape(name)
	if err := mgmt(ctx, http.MethodDelete, base, path, ""); err != nil && !errors.Is(err, errNotFound) {
		return err
	}
	return mgmt(ctx, http.MethodPut, base, path, `{"durable":true}`)
}

var errNotFound = errors.New("not found")

// mgmt calls the RabbitMQ management API; base carries the credentials.
func mgmt(ctx context.Context, method, base, path, body string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("management URL %q: %w", base, err)
	}
	user := u.User
	u.User = nil
	// path is already escaped (%2F is the default vhost): keep it as is.
	req, err := http.NewRequestWithContext(ctx, method, u.String()+path, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	if user != nil {
		pw, _ := user.Password()
		req.SetBasicAuth(user.Username(), pw)
	}
	req.Header.Set("Content-Type", "application/json")
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }() // the status and the message are what we report
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s %s: %w: %s", method, path, errNotFound, msg)
	case resp.StatusCode >= 300:
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
	return nil
}

func dial(ctx context.Context, raw string) (*goamqp.Conn, *goamqp.Session, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("AMQP URL %q: %w", raw, err)
	}
	opts := &goamqp.ConnOptions{SASLType: goamqp.SASLTypeAnonymous(), ContainerID: "fedrouter-demo-client"}
	if u.User != nil {
		pw, _ := u.User.Password()
		opts.SASLType = goamqp.SASLTypePlain(u.User.Username(), pw)
		u.User = nil
	}
	conn, err := goamqp.Dial(ctx, u.String(), opts)
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s: %w", u, err)
	}
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		_ = conn.Close() // the session's failure is the error to report
		return nil, nil, fmt.Errorf("session on %s: %w", u, err)
	}
	return conn, sess, nil
}

// publish sends count messages labelled label, numbered 0..count-1 in the
// application property "seq", and fails unless every one is accepted.
// Up to 100 sends are in flight: fast, and bounded.
func publish(ctx context.Context, rawURL, addr string, count int, label string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, sess, err := dial(ctx, rawURL)
	if err != nil {
		return err
	}
	defer closeConn(conn)
	snd, err := sess.NewSender(ctx, addr, nil)
	if err != nil {
		return fmt.Errorf("attach sender to %s: %w", addr, err)
	}
	receipts := make(chan goamqp.SendReceipt, 100)
	done := make(chan error, 1)
	// The receipt loop, owned by publish: it ends when receipts is closed
	// and is joined through done on every return.
	go func() {
		var first error
		for r := range receipts {
			st, err := r.Wait(ctx)
			if first == nil && err != nil {
				first = fmt.Errorf("outcome: %w", err)
			} else if _, ok := st.(*goamqp.StateAccepted); first == nil && err == nil && !ok {
				first = fmt.Errorf("outcome %T, want accepted", st)
			}
		}
		done <- first
	}()
	for i := 0; i < count; i++ {
		msg := goamqp.NewMessage(fmt.Appendf(nil, "%s %d", label, i))
		msg.ApplicationProperties = map[string]any{"label": label, "seq": int64(i)}
		// The creation time crosses with the message: expect reports the
		// time from the first send to the last arrival.
		msg.Properties = &goamqp.MessageProperties{CreationTime: ptr(time.Now())}
		r, err := snd.SendWithReceipt(ctx, msg, nil)
		if err != nil {
			close(receipts)
			return fmt.Errorf("send %d to %s: %w (receipts: %v)", i, addr, err, <-done)
		}
		receipts <- r
	}
	close(receipts)
	if err := <-done; err != nil {
		return fmt.Errorf("publish to %s: %w", addr, err)
	}
	fmt.Printf("published %d %s messages to %s\n", count, label, addr)
	return nil
}

// receiver grants credit by hand, one batch at a time and only once the
// previous batch is used up: go-amqp's automatic credit can stall for good
// against RabbitMQ 3.10 (docs/go-amqp-credit.md).
type receiver struct {
	r    *goamqp.Receiver
	left int64 // credit granted and not yet used; negative after over-delivery
}

const batch = 500

func newReceiver(ctx context.Context, sess *goamqp.Session, addr string) (*receiver, error) {
	r, err := sess.NewReceiver(ctx, addr, &goamqp.ReceiverOptions{Credit: -1})
	if err != nil {
		return nil, fmt.Errorf("attach receiver to %s: %w", addr, err)
	}
	return &receiver{r: r}, nil
}

// next returns the next message, accepted, or an error when ctx ends.
func (r *receiver) next(ctx context.Context) (*goamqp.Message, error) {
	if r.left <= 0 {
		if err := r.r.IssueCredit(uint32(batch - r.left)); err != nil {
			return nil, err
		}
		r.left = batch
	}
	msg, err := r.r.Receive(ctx, nil)
	if err != nil {
		return nil, err
	}
	r.left--
	// Pre-settled messages (the Proton C broker sends them so) need no
	// accept; AcceptMessage returns at once for them.
	return msg, r.r.AcceptMessage(ctx, msg)
}

// expect receives until count distinct messages labelled label arrived,
// then waits a moment for more: duplicates are reported (at-least-once
// allows them), messages of another label fail the run.
func expect(ctx context.Context, rawURL, addr string, count int, label string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, sess, err := dial(ctx, rawURL)
	if err != nil {
		return err
	}
	defer closeConn(conn)
	r, err := newReceiver(ctx, sess, addr)
	if err != nil {
		return err
	}
	seen := map[int64]bool{}
	paths := map[string]int{}
	total, dups, others := 0, 0, 0
	var firstSent, lastArrived time.Time
	for {
		rctx := ctx
		var stop context.CancelFunc = func() {}
		if len(seen) >= count { // all there: anything else within a second?
			rctx, stop = context.WithTimeout(ctx, time.Second)
		}
		msg, err := r.next(rctx)
		stop()
		if err != nil {
			if len(seen) >= count && errors.Is(err, context.DeadlineExceeded) {
				break
			}
			return fmt.Errorf("%s: %d of %d %s messages within %s: %w", addr, len(seen), count, label, timeout, err)
		}
		total++
		seq, _ := msg.ApplicationProperties["seq"].(int64)
		switch {
		case msg.ApplicationProperties["label"] != label:
			others++
		case seen[seq]:
			dups++
		default:
			seen[seq] = true
			if trace, ok := msg.Annotations["x-fedrouter-trace"].(string); ok {
				paths[trace+","+brokerOf(addr, rawURL)]++
			}
			lastArrived = time.Now()
			if p := msg.Properties; p != nil && p.CreationTime != nil && (firstSent.IsZero() || p.CreationTime.Before(firstSent)) {
				firstSent = *p.CreationTime
			}
		}
	}
	span := "?"
	if !firstSent.IsZero() {
		span = lastArrived.Sub(firstSent).Round(time.Millisecond).String()
	}
	fmt.Printf("received %d %s messages from %s (%d duplicates, %d others); first sent to last received: %s\n",
		len(seen), label, addr, dups, others, span)
	byPath := make([]string, 0, len(paths))
	for p := range paths {
		byPath = append(byPath, p)
	}
	sort.Strings(byPath)
	for _, p := range byPath {
		fmt.Printf("  %5d came by %s\n", paths[p], strings.ReplaceAll(p, ",", " > "))
	}
	if len(seen) > count || others > 0 {
		return fmt.Errorf("%s: %d messages, %d of them not %s: want exactly %d", addr, total, others, label, count)
	}
	return nil
}

// drain empties an address no management API can purge (a Proton broker's
// in-memory queue): receive until nothing comes for half a second.
func drain(ctx context.Context, rawURL, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, sess, err := dial(ctx, rawURL)
	if err != nil {
		return err
	}
	defer closeConn(conn)
	r, err := newReceiver(ctx, sess, addr)
	if err != nil {
		return err
	}
	n := 0
	for {
		rctx, stop := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := r.next(rctx)
		stop()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			return fmt.Errorf("drain %s: %w", addr, err)
		}
		n++
	}
	if n > 0 {
		fmt.Printf("drained %d old messages from %s\n", n, addr)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// closeConn ends a command's connection. The command's outcome is already
// decided (every outcome was waited for), so a close error changes nothing.
func closeConn(c *goamqp.Conn) { _ = c.Close() }

// brokerOf names the receiving broker in a path: the demo's brokers are
// RabbitMQ nodes on ports 5701..5709 (rabbitN).
func brokerOf(_, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err == nil && len(u.Port()) == 4 && strings.HasPrefix(u.Port(), "570") {
		return "rabbit" + u.Port()[3:]
	}
	return "here"
}

// proxy runs a fault-injecting TCP proxy (the test suite's) until SIGTERM.
func proxy(target, addrFile string) error {
	p, err := brokertest.NewFaultProxy(target)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }() // exiting: its only error is the listener's close
	if err := os.WriteFile(addrFile, []byte(p.Addr()), 0o600); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	for s := range sigs {
		switch s {
		case syscall.SIGUSR1:
			p.Cut()
			fmt.Printf("proxy %s -> %s: cut\n", p.Addr(), target)
		case syscall.SIGUSR2:
			p.Heal()
			fmt.Printf("proxy %s -> %s: healed\n", p.Addr(), target)
		default:
			return nil
		}
	}
	return nil
}
