package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/store/pgstore"
	"github.com/fedrouter/fedrouter/store/storetest"
)

// memberConfig writes a cluster member's configuration with store URL.
func memberConfig(t *testing.T, store string) string {
	t.Helper()
	bs := brokertest.Require(t, "rabbit1")
	yaml := fmt.Sprintf(`router_id: bad-input
brokers:
  - {name: r1, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
admin: {listen: "127.0.0.1:0"}
log: {level: info, format: json}
cluster: {name: bad-input, store: %q, heartbeat: 200ms, lease: 1s}
`, bs[0].URL, bs[0].MgmtURL, store)
	yaml = withAdminPort(t, yaml)
	path := filepath.Join(t.TempDir(), "member.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runRefused runs a member that must refuse to start: it exits non-zero
// within the deadline, saying want, never the password.
func runRefused(t *testing.T, config, want, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary(t), "run", "--config", config).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the member did not exit (retrying?):\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), want) || strings.Contains(string(out), password) {
		t.Fatalf("exit %v; want an error holding %q and not the password:\n%s", err, want, out)
	}
	if n := strings.Count(string(out), "retrying"); n > 0 {
		t.Fatalf("%d retries of a store that refused the member:\n%s", n, out)
	}
}

// A wrong store password: the member refuses to start at once, with a
// clear error (no retry storm against the database).
func TestClusterWrongStorePassword(t *testing.T) {
	url := storetest.URL(t)
	bad := strings.Replace(url, "fedrouter:fedrouter@", "fedrouter:Wr0ng-Pa55@", 1)
	runRefused(t, memberConfig(t, bad), "store: authentication failed", "Wr0ng-Pa55")
}

// A store a newer fedrouter migrated: refused, naming both versions.
func TestClusterNewerStoreSchema(t *testing.T) {
	url := storetest.URL(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close(ctx) }()
	db := fmt.Sprintf("t_newer_%d", time.Now().UnixNano()%1e9)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(ctx, "DROP DATABASE "+db+" WITH (FORCE)") }) // best effort: a test database
	dbURL := strings.Replace(url, "/fedrouter?", "/"+db+"?", 1)
	st, err := pgstore.Open(ctx, dbURL, "c", pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "UPDATE fedrouter_schema SET version = 42"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(ctx)
	runRefused(t, memberConfig(t, dbURL), fmt.Sprintf("schema version 42, this fedrouter knows versions up to %d", pgstore.SchemaVersion), "fedrouter:fedrouter@")
}

// A store not reachable at start: the member starts (admin API up, no
// routes), says so, and retries with backoff; cluster status says it has
// not joined.
func TestClusterStoreUnreachableAtStart(t *testing.T) {
	p := startRouter(t, memberConfig(t, "postgres://fedrouter:N0pe-Secret@127.0.0.1:1/fedrouter?sslmode=disable"))
	brokertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if n := strings.Count(p.out.String(), "cluster store unreachable; retrying"); n < 2 {
			return fmt.Errorf("%d retries logged", n)
		}
		return nil
	})
	out, code := p.cli("cluster", "status")
	if code != 0 || !strings.Contains(out, "has not answered yet") {
		t.Fatalf("cluster status: exit %d:\n%s", code, out)
	}
	if out, code := p.cli("queue", "add", "r1", "r1", "amq.fanout", "q"); code == 0 {
		t.Fatalf("a route change with the store down succeeded:\n%s", out)
	}
	// The list is this member's only: route list says so, status 1.
	if out, code := p.cli("route", "list"); code != 1 || !strings.Contains(out, "fedrouter: route list: the cluster store cannot be read: this member's routes only are listed") {
		t.Fatalf("route list with the store down: exit %d:\n%s", code, out)
	}
	if strings.Contains(p.out.String(), "N0pe-Secret") {
		t.Fatalf("the store password is in the log:\n%s", p.out.String())
	}
}
