package main

import (
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

// Durable routes added by several clients at once, the router killed with
// -9 while adds are in flight: every add the API acknowledged is there
// after the restart (the state journal synced it before the answer);
// adds cut off by the kill may or may not be.
func TestAcknowledgedAddsSurviveKill9(t *testing.T) {
	parallelE2E(t)
	const clients, killAfter = 4, 200
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	missing := brokertest.UniqueName(t, "missing") // the routes need not run: they fail, and stay
	cfgPath := pairConfig(t, t.TempDir(), "kill9", bs)
	p := startRouter(t, cfgPath)
	api := apiOf(t, p)

	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	killed := make(chan struct{})
	var once sync.Once
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				spec := routes.Spec{Kind: routes.KindQueue, Dest: "r2", Src: "r1", Exchange: missing, Queue: fmt.Sprintf("%s.%d.%d", missing, c, i), Durable: true}
				st, err := api.AddRoute(t.Context(), spec)
				if err != nil {
					return // the router is gone: this add was not acknowledged
				}
				mu.Lock()
				acked[st.ID] = true
				n := len(acked)
				mu.Unlock()
				if n >= killAfter {
					once.Do(func() {
						_ = p.cmd.Process.Signal(syscall.SIGKILL) // adds of the other clients are in flight
						close(killed)
					})
				}
			}
		}()
	}
	<-killed
	wg.Wait()
	_ = p.cmd.Wait()

	p = startRouter(t, cfgPath)
	api = apiOf(t, p)
	sts, err := api.Routes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, st := range sts {
		got[st.ID] = true
	}
	for id := range acked {
		if !got[id] {
			t.Errorf("route %s was acknowledged before the kill and is gone after it", id)
		}
	}
	t.Logf("%d adds acknowledged before kill -9, %d routes after the restart", len(acked), len(got))
}

// apiOf is a client of p's admin API with the token it generated.
func apiOf(t *testing.T, p *routerProc) *adminclient.Client {
	t.Helper()
	cfg, err := config.Load(p.config)
	if err != nil {
		t.Fatal(err)
	}
	e, err := cfg.AdminEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	api, err := adminclient.New(p.admin, adminclient.Options{Token: e.Token, CAFile: e.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	return api
}
