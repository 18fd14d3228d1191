package router

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/topology"
)

// Issue 27, item 7: anyone who may publish on the control address, without
// the secret, made the router buffer up to 50 messages of the broker's
// maximum size (RabbitMQ: 128 MiB) before the 64 KiB check. Here 1 MiB
// and 10 MiB messages are published to a router's control address on
// RabbitMQ and on qpidd: the router never holds more than 64 KiB of one
// (its receivers' peak), counts both as too_large, logs one line for
// them, and a second router's advertisement still comes through after.
func TestIntegrationControlOversizeRefused(t *testing.T) {
	for _, b := range brokertest.Require(t, "rabbit1", "qpidd1") {
		t.Run(b.Name, func(t *testing.T) {
			addr := brokertest.UniqueName(t, "h-ctl-big")
			if b.Name == "rabbit1" {
				t.Cleanup(func() { removeControlObjects(b, addr, "victim", "peer") })
			}
			log := &syncBuf{}
			victim := NewControl(map[string]amqp.Broker{b.Name: {Conn: brokertest.Dial(t, b.Config(), amqp.ConnOptions{}),
				Profile: brokertest.Profile(t, b.Config())}}, ControlOptions{RouterID: "victim", Address: addr,
				Backoff: amqp.Backoff{Min: 100 * time.Millisecond, Max: time.Second}, Log: zerolog.New(log)})
			victim.SetSecret([]byte(controlSecret))
			victim.Start(t.Context())
			t.Cleanup(victim.Stop)
			peer := controlFor(t, "peer", addr, []brokertest.Broker{b})
			waitAdvertisement(t, victim, peer, b.Name, 1)

			p := brokertest.Profile(t, b.Config())
			target, err := p.Target(amqp.Node{Kind: amqp.Control, Name: addr})
			if err != nil {
				t.Fatal(err)
			}
			attacker := brokertest.Session(t, brokertest.Dial(t, b.Config(), amqp.ConnOptions{}))
			sizes := []int{1 << 20, 10 << 20}
			brokertest.SendAll(t, attacker, target.Address, 2, len(sizes), func(i int) *goamqp.Message {
				return goamqp.NewMessage(bytes.Repeat([]byte("x"), sizes[i]))
			})
			brokertest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
				if n := victim.Stats().Dropped[topology.ReasonTooLarge]; n < 2 {
					return fmt.Errorf("%d too_large counted", n)
				}
				return nil
			})
			waitAdvertisement(t, victim, peer, b.Name, 7)

			st := victim.Stats()
			t.Logf("%s: dropped %v, peak held for one message %d bytes", b.Name, st.Dropped, st.PeakBuffered)
			if st.Dropped[topology.ReasonTooLarge] != 2 {
				t.Errorf("too_large %d, want 2", st.Dropped[topology.ReasonTooLarge])
			}
			if st.PeakBuffered > topology.MaxLSASize {
				t.Errorf("the router held %d bytes of one control message, the bound is %d", st.PeakBuffered, topology.MaxLSASize)
			}
			lines, accounted := dropLines(t, log.String())
			if lines != 1 || accounted[topology.ReasonTooLarge] != 1 {
				t.Errorf("%d drop lines (%v), want the one first too_large line:\n%s", lines, accounted, log.String())
			}
		})
	}
}

// waitAdvertisement has peer publish its advertisement seq on broker
// until victim has queued it.
func waitAdvertisement(t *testing.T, victim, peer *Control, broker string, seq uint64) {
	t.Helper()
	lsa := signedLSA(t, "peer", 1, seq, broker)
	brokertest.Eventually(t, 60*time.Second, 200*time.Millisecond, func() error {
		peer.Send(broker, lsa, []string{"victim"})
		for _, in := range drain(victim) {
			if l, err := topology.Decode(in.Data, []byte(controlSecret)); err == nil && l.Router == "peer" && l.Seq == seq {
				return nil
			}
		}
		return fmt.Errorf("peer's advertisement %d not received", seq)
	})
}
