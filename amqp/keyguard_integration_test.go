package amqp_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// A message whose annotations have a binary key, published by another
// client (Python Proton), read from each broker that keeps it: the
// receive fails with a decode error; the process lives (go-amqp v1.7.0
// alone panics in its connection goroutine: amqp/keyguard.go).
func TestIntegrationBinaryAnnotationKeyIsAnError(t *testing.T) {
	for _, b := range brokertest.Require(t, "rabbit1", "proton1") {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config()
			q := brokertest.UniqueName(t, "badkey")
			brokertest.DeclareQueue(t, cfg, q)
			p := brokertest.Profile(t, cfg)
			target, err := p.Target(famqp.Node{Kind: famqp.Queue, Name: q})
			if err != nil {
				t.Fatal(err)
			}
			url := b.URL
			if cfg.Username != "" {
				url = strings.Replace(url, "amqp://", "amqp://"+cfg.Username+":"+cfg.Password+"@", 1)
			}
			if out, err := exec.Command("/usr/bin/python3", "../testdata/badkey.py", url, target.Address).CombinedOutput(); err != nil {
				t.Fatalf("badkey.py: %v\n%s", err, out)
			}
			s := brokertest.Session(t, brokertest.Dial(t, cfg, famqp.ConnOptions{}))
			src, err := p.Source(context.Background(), famqp.Node{Kind: famqp.Queue, Name: q}, famqp.Subscription{})
			if err != nil {
				t.Fatal(err)
			}
			r := brokertest.OpenReceiver(t, s, src, 10)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			msg, err := r.Receive(ctx)
			if err == nil { // both keep it (measured): a change there is news
				t.Fatalf("%s did not keep the binary key: received %q (annotations %v)", b.Name, msg.Data(), msg.GoAMQP().Annotations)
			}
			if ctx.Err() != nil {
				t.Fatalf("no message and no error: %v", err)
			}
			t.Logf("%s: the receive failed as it should: %v", b.Name, err)
		})
	}
}
