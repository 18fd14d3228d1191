package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// A router restarted with a few hundred durable routes in its state file,
// between real brokers, logs their coming up and one summary line with
// the count once every one is Operational; a flush of them says how many
// went, on the CLI and in the log.
func TestStartProgressSummary(t *testing.T) {
	const n, clients = 300, 4
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	key := brokertest.UniqueName(t, "h-progress")
	cfgPath := pairConfig(t, t.TempDir(), "progress", bs)
	p := startRouter(t, cfgPath)
	api := apiOf(t, p)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += clients {
				spec := routes.Spec{Kind: routes.KindExchange, Dest: "r2", Src: "r1", Exchange: "amq.topic", Key: fmt.Sprintf("%s.%d", key, i), Durable: true}
				if _, err := api.AddRoute(t.Context(), spec); err != nil {
					errs <- fmt.Errorf("route %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(func() (all []error) {
		for err := range errs {
			all = append(all, err)
		}
		return all
	}()...); err != nil {
		t.Fatal(err)
	}
	// The first start restored none: no progress at all.
	if regexp.MustCompile(`"message":"routes: `).MatchString(p.out.String()) {
		t.Errorf("progress logged with no route restored:\n%s", p.out.String())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.out.String())
	}

	p = startRouter(t, cfgPath)
	api = apiOf(t, p)
	// The subscriptions at r1 go with the routes.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := api.FlushRoutes(ctx, ""); err != nil {
			t.Errorf("flush: %v", err)
		}
	})
	summary := regexp.MustCompile(`"operational":(\d+),"routes":(\d+),"summary":true.*"message":"(routes: [^"]*)"`)
	var m []string
	brokertest.Eventually(t, 3*time.Minute, 200*time.Millisecond, func() error {
		if m = summary.FindStringSubmatch(p.out.String()); m == nil {
			return fmt.Errorf("no start-up summary logged yet")
		}
		return nil
	})
	want := fmt.Sprintf("%d", n)
	if m[1] != want || m[2] != want || !regexp.MustCompile(fmt.Sprintf(`^routes: all %d Operational after [0-9.ms]+$`, n)).MatchString(m[3]) {
		t.Errorf("summary %q (%s of %s Operational), want all %d:\n%s", m[3], m[1], m[2], n, p.out.String())
	}
	sts, err := api.Routes(t.Context())
	if err != nil || len(sts) != n {
		t.Fatalf("%d routes after the restart (%v), want %d", len(sts), err, n)
	}
	progress := regexp.MustCompile(fmt.Sprintf(`"summary":false.*"message":"routes: [0-9,]+ of %d Operational"`, n)).FindAllString(p.out.String(), -1)
	t.Logf("summary: %s (after %d progress lines)", m[3], len(progress))

	// The flush says how many routes went, on the CLI and in the log (300
	// subscriptions removed at the source take longer than the default 10s).
	if out, code := p.cli("route", "flush", "--timeout", "2m"); code != 0 || out != fmt.Sprintf("%d routes deleted\n", n) {
		t.Errorf("route flush: exit %d: %q, want %d routes deleted", code, out, n)
	}
	flushed := regexp.MustCompile(fmt.Sprintf(`"deleted":%d,"in_flight":\d+.*"message":"routes flushed: %d deleted; \d+ messages were in flight \(not yet settled at their sources\)"`, n, n))
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if !flushed.MatchString(p.out.String()) {
			return fmt.Errorf("no flush summary logged")
		}
		return nil
	})
}
