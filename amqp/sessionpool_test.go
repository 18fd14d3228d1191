package amqp_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// sharedSetup dials rabbit1 with perSession senders a session and
// declares a queue; it returns the connection, the queue as a target and
// a context for the test.
func sharedSetup(t *testing.T, perSession int) (*famqp.Conn, famqp.LinkSpec, context.Context) {
	cfg := brokertest.Require(t, "rabbit1")[0].Config()
	q := brokertest.UniqueName(t, "shared")
	brokertest.DeclareQueue(t, cfg, q)
	c := brokertest.Dial(t, cfg, famqp.ConnOptions{LinksPerSession: perSession})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c, famqp.LinkSpec{Address: "/amq/queue/" + q}, ctx
}

// sendAccepted sends one message on snd and waits for its outcome.
func sendAccepted(ctx context.Context, snd *famqp.PooledSender, body string) error {
	r, err := snd.Send(ctx, famqp.NewMessage([]byte(body)))
	if err != nil {
		return err
	}
	o, err := r.Wait(ctx)
	if err != nil {
		return err
	}
	if o.Kind != famqp.Accepted {
		return fmt.Errorf("outcome %s (%s)", o.Kind, o.Reason())
	}
	return nil
}

// A refused attach ends the shared session on RabbitMQ. The senders that
// were on it must fail with ErrSharedSessionEnded — no refusal of their
// own, so their routes retry rather than show Failed — and the next
// sender must land on a new session and work.
func TestIntegrationSharedSessionRefusedAttach(t *testing.T) {
	c, target, ctx := sharedSetup(t, 8)
	good, err := c.NewSharedSender(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := sendAccepted(ctx, good, "before"); err != nil {
		t.Fatal(err)
	}
	bad, err := c.NewSharedSender(ctx, famqp.LinkSpec{Address: "/exchange/" + brokertest.UniqueName(t, "missing")})
	if err == nil {
		bad.Close()
		t.Fatal("attach to a missing exchange: no error")
	}
	if !famqp.Refusal(err) {
		t.Errorf("the refused attach: %v, want a refusal", err)
	}
	// RabbitMQ ends the session with the refusal: the good sender's next
	// send or outcome fails, said as the shared session's end.
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		err := sendAccepted(ctx, good, "during")
		switch {
		case err == nil:
			return errors.New("the good sender still works: the session was not ended")
		case !errors.Is(err, famqp.ErrSharedSessionEnded):
			t.Fatalf("the good sender failed with %v, want ErrSharedSessionEnded", err)
		case famqp.Refusal(err):
			t.Fatalf("the good sender's failure %v counts as a refusal", err)
		}
		return nil
	})
	again, err := c.NewSharedSender(ctx, target)
	if err != nil {
		t.Fatalf("a sender after the session ended: %v", err)
	}
	defer again.Close()
	if err := sendAccepted(ctx, again, "after"); err != nil {
		t.Fatalf("a sender on a new shared session: %v", err)
	}
}

// Senders beyond LinksPerSession begin another session; all of them work
// at once.
func TestIntegrationSharedSessionsFillUp(t *testing.T) {
	c, target, ctx := sharedSetup(t, 3)
	var snds []*famqp.PooledSender
	for range 7 {
		s, err := c.NewSharedSender(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		snds = append(snds, s)
	}
	for i, s := range snds {
		if err := sendAccepted(ctx, s, fmt.Sprint(i)); err != nil {
			t.Fatalf("sender %d: %v", i, err)
		}
	}
	for _, s := range snds {
		s.Close()
	}
}
