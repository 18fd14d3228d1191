package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// A 1 MiB message crosses as many frames both ways: sent by the engine
// (split at the broker's max-frame-size), received with our
// max-frame-size at 512 (the broker splits it into ~2,000 frames and the
// receiver reassembles them).
func TestConformanceMultiFrame(t *testing.T) {
	for _, name := range []string{"rabbit1", "proton1", "qpidd1"} {
		t.Run(name, func(t *testing.T) {
			b := brokertest.Require(t, name)[0]
			addr := queue(t, b)
			big := body(7, 1<<20)
			msg := encodeMessage("big", big)
			out := newOutcomes(1)
			snd, err := session(t, dial(t, b, engine.Options{MaxFrameSize: 512}), engine.SessionOptions{}).
				NewSender(t.Context(), engine.SenderOptions{Address: addr, OnSettled: out.onSettled})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := snd.Send(t.Context(), msg); err != nil {
				t.Fatal(err)
			}
			out.wait(t, 1, 30*time.Second)
			col := newCollector(1)
			s := session(t, dial(t, b, engine.Options{MaxFrameSize: 512}), engine.SessionOptions{IncomingWindow: 16})
			if _, err := s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: addr, Credit: 1, OnMessage: col.onMessage}); err != nil {
				t.Fatal(err)
			}
			got, err := dataOf(col.take(t, 1, 30*time.Second)[0])
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("1 MiB message: %v, %d bytes back", err, len(got))
			}
		})
	}
}

// Credit 1 and a session window of one frame: the broker must wait for
// every flow we send, so both are exhausted and reopened per message.
func TestConformanceCreditOneWindowOne(t *testing.T) {
	for _, name := range []string{"rabbit1", "proton1", "qpidd1"} {
		t.Run(name, func(t *testing.T) {
			b := brokertest.Require(t, name)[0]
			addr := queue(t, b)
			const n = 200
			out := newOutcomes(n)
			snd, err := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{}).
				NewSender(t.Context(), engine.SenderOptions{Address: addr, OnSettled: out.onSettled})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if _, err := snd.Send(t.Context(), encodeMessage(fmt.Sprint(i), body(i, 64))); err != nil {
					t.Fatal(err)
				}
			}
			out.wait(t, n, 20*time.Second)
			col := newCollector(n)
			s := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{IncomingWindow: 1})
			if _, err := s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: addr, Credit: 1, OnMessage: col.onMessage}); err != nil {
				t.Fatal(err)
			}
			for i, p := range col.take(t, n, 20*time.Second) {
				if got, err := dataOf(p); err != nil || !bytes.Equal(got, body(i, 64)) {
					t.Fatalf("message %d: %v", i, err)
				}
			}
		})
	}
}

// Both settle modes: a pre-settled sender gets no outcome and the
// message arrives; a receiver asking for pre-settled deliveries gets
// them settled and settles nothing.
func TestConformancePresettled(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	addr := queue(t, b)
	s := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{})
	snd, err := s.NewSender(t.Context(), engine.SenderOptions{Address: addr, Mode: engine.SettlePresettled})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := 0; i < n; i++ {
		if _, err := snd.Send(t.Context(), encodeMessage(fmt.Sprint(i), body(i, 32))); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan bool, n)
	_, err = s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: addr, Mode: engine.SettlePresettled, Credit: 10,
		OnMessage: func(d *engine.Delivery) { got <- d.Settled }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		select {
		case settled := <-got:
			if !settled {
				t.Fatalf("delivery %d not pre-settled", i)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d pre-settled messages", i, n)
		}
	}
}

// A wrong password is ErrAuth at once, with the password nowhere in it.
func TestConformanceSASLWrongPassword(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	start := time.Now()
	_, err := engine.Dial(t.Context(), b.Addr(), engine.Options{SASL: engine.SASLPlain, User: "guest", Password: "not-the-password"})
	if !errors.Is(err, engine.ErrAuth) {
		t.Fatalf("err %v, want ErrAuth", err)
	}
	if strings.Contains(err.Error(), "not-the-password") {
		t.Fatalf("the password is in the error: %v", err)
	}
	t.Logf("refused in %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// A receiver on a queue that does not exist is refused by RabbitMQ with
// amqp:not-found: a *LinkError carrying the peer's condition.
func TestConformanceDetachWithError(t *testing.T) {
	for _, name := range []string{"rabbit1", "qpidd1"} {
		t.Run(name, func(t *testing.T) {
			b := brokertest.Require(t, name)[0]
			addr := "h-engine-missing-" + fmt.Sprint(time.Now().UnixNano())
			if b.Kind == "rabbitmq" {
				addr = "/amq/queue/" + addr
			}
			s := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{})
			_, err := s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: addr})
			var le *engine.LinkError
			var we *wire.Error
			if !errors.As(err, &le) || !errors.As(err, &we) || we.Condition != "amqp:not-found" {
				t.Fatalf("err %v (%T), want a LinkError with amqp:not-found", err, err)
			}
			t.Logf("%v", err)
		})
	}
}

// A peer stopped with SIGSTOP sends nothing: the connection fails with
// ErrIdleTimeout within about twice our idle-timeout. A private Python
// broker, never a shared one.
func TestConformanceIdleTimeoutSIGSTOP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	const script = "/usr/share/proton/examples/python/broker.py"
	if _, err := os.Stat(script); err != nil {
		t.Skipf("no Proton Python broker: %v", err)
	}
	addr := "127.0.0.1:59417"
	cmd := exec.Command("/usr/bin/python3", script, "-a", addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var c *engine.Conn
	brokertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		var err error
		c, err = engine.Dial(t.Context(), addr, engine.Options{SASL: engine.SASLAnonymous, IdleTimeout: 500 * time.Millisecond})
		return err
	})
	defer func() { _ = c.Close() }()
	// Alive across several idle-timeouts while the broker runs: it
	// answers our heartbeats' deadline with its own.
	time.Sleep(2 * time.Second)
	if err := c.Err(); err != nil {
		t.Fatalf("connection ended while the broker ran: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("no error 30 s after the peer stopped")
	}
	if !errors.Is(c.Err(), engine.ErrIdleTimeout) {
		t.Fatalf("err %v, want ErrIdleTimeout", c.Err())
	}
	t.Logf("detected after %v: %v", time.Since(stopped).Round(time.Millisecond), c.Err())
}
