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
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// Two `fedrouter run` with the same state: the second exits at once,
// naming the pid of the first, and changes nothing in the state
// directory. No broker is needed: the routers' only broker is a closed
// port.
func TestSecondRouterOnSameStateRefused(t *testing.T) {
	parallelE2E(t)
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "router.yaml")
	body := `router_id: locktest
brokers:
  - {name: gone1, url: "amqp://127.0.0.1:1", profile: generic}
  - {name: gone2, url: "amqp://127.0.0.1:2", profile: generic}
routes:
  - {kind: queue, src: gone1, dest: gone2, exchange: x, queue: q}
reconnect: {min: 1s, max: 2s}
log: {level: info, format: json}
admin: {listen: off}
`
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	durable := routes.Spec{Kind: routes.KindQueue, Src: "gone1", Dest: "gone2", Exchange: "x", Queue: "runtime", Durable: true}.WithDefaults()
	if err := routes.SaveState(filepath.Join(dir, "fedrouter-locktest.routes.json"), []routes.Spec{durable}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := exec.CommandContext(ctx, binary(t), "run", "--config", conf)
	var out1 syncBuffer
	first.Stdout, first.Stderr = &out1, &out1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	brokertest.Eventually(t, time.Minute, 50*time.Millisecond, func() error {
		if !strings.Contains(out1.String(), "fedrouter started") {
			return fmt.Errorf("the first router has not started:\n%s", out1.String())
		}
		return nil
	})
	before := dirState(t, dir)

	second := exec.CommandContext(ctx, binary(t), "run", "--config", conf)
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the second router did not fail: %v\n%s", err, out)
	}
	lock := filepath.Join(dir, "fedrouter-locktest.routes.json.lock")
	want := lock + " is locked by another process (pid " + strconv.Itoa(first.Process.Pid) + ")"
	if !strings.Contains(string(out), want) {
		t.Fatalf("the second router's error does not say %q:\n%s", want, out)
	}
	if after := dirState(t, dir); after != before {
		t.Fatalf("the second router changed the state directory:\nbefore %s\nafter  %s", before, after)
	}
	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first router after SIGTERM: %v\n%s", err, out1.String())
	}
}

// dirState is every file of dir with its size, mode, time and content.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "%s %v %d %d %q; ", e.Name(), fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), data)
	}
	return b.String()
}
