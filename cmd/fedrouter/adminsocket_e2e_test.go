package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// The CLI beside the router talks to it over the Unix socket in the
// state directory, with no token. With the router stopped, a process that
// took the admin port gets no connection and no token from the CLI (it
// used to get "Authorization: Bearer" and the persistent token).
func TestCLISendsNoTokenToAdminPortSquatter(t *testing.T) {
	parallelE2E(t)
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	_ = free.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "router.yaml")
	body := fmt.Sprintf(`router_id: socktest
brokers:
  - {name: gone1, url: "amqp://127.0.0.1:1", profile: generic}
  - {name: gone2, url: "amqp://127.0.0.1:2", profile: generic}
reconnect: {min: 1s, max: 2s}
log: {level: info, format: json}
admin: {listen: "127.0.0.1:%d"}
`, port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, binary(t), "run", "--config", conf)
	var out syncBuffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Process.Kill(); _ = run.Wait() }()
	brokertest.Eventually(t, time.Minute, 50*time.Millisecond, func() error {
		if !strings.Contains(out.String(), "fedrouter started") {
			return fmt.Errorf("the router has not started:\n%s", out.String())
		}
		return nil
	})
	socket := filepath.Join(dir, "fedrouter-socktest.admin.sock")
	if fi, err := os.Stat(socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v %v, want mode 0600", socket, fi, err)
	}
	cli := func() (string, error) {
		b, err := exec.CommandContext(ctx, binary(t), "broker", "list", "--config", conf, "--timeout", "10s").CombinedOutput()
		return string(b), err
	}
	if got, err := cli(); err != nil || !strings.Contains(got, "gone1") {
		t.Fatalf("the CLI over the socket: %v\n%s", err, got)
	}
	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("router after SIGTERM: %v", err)
	}

	squat, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var heard []string
	go func() {
		for {
			c, err := squat.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			mu.Lock()
			heard = append(heard, string(buf[:n]))
			mu.Unlock()
			_ = c.Close()
		}
	}()
	got, err := cli()
	_ = squat.Close()
	if err == nil || !strings.Contains(got, socket) {
		t.Fatalf("the CLI with the router stopped: %v, want a failure naming the socket:\n%s", err, got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) > 0 {
		t.Fatalf("the process on the admin port got %d connection(s) from the CLI: %q", len(heard), heard)
	}
}
