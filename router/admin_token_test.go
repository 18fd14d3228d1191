package router

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/config"
)

// tokenConfig is a valid configuration in dir with the given admin lines.
func tokenConfig(t *testing.T, dir string, admin string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(dir, "router.yaml"),
		[]byte("router_id: r1\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n"+admin+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestAdminTokenGenerated: without a configured token the first start
// makes one (0600, beside the state file, long enough), later starts use
// it, and routers starting at once agree on one.
func TestAdminTokenGenerated(t *testing.T) {
	dir := t.TempDir()
	cfg := tokenConfig(t, dir, "state_file: state/r1.json")
	want := filepath.Join(dir, "state", "fedrouter-r1.admin-token")
	tok, path, created, err := AdminToken(cfg)
	if err != nil || path != want || !created {
		t.Fatalf("first start: path %q created %v err %v; want %s", path, created, err, want)
	}
	if err := config.CheckAdminToken(tok); err != nil || len(tok) < 40 {
		t.Fatalf("generated token of %d bytes: %v", len(tok), err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v (%v), want 0600", fi.Mode(), err)
	}
	if got, err := config.ReadTokenFile(path); err != nil || got != tok {
		t.Fatalf("the file holds %q (%v), not the token served", got, err)
	}
	again, _, created, err := AdminToken(cfg)
	if err != nil || again != tok || created {
		t.Fatalf("second start: same token %v, created %v, %v", again == tok, created, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("left behind in %s: %v", filepath.Dir(path), entries)
	}

	// Two routers (same id, same directory) at once: one token.
	cfg = tokenConfig(t, t.TempDir(), "")
	var wg sync.WaitGroup
	toks := make([]string, 8)
	for i := range toks {
		wg.Go(func() {
			tok, _, _, err := AdminToken(cfg)
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	for _, tk := range toks {
		if tk != toks[0] || tk == "" {
			t.Fatalf("concurrent starts got different tokens")
		}
	}
}

// TestAdminTokenRefusesUnsafeFiles: a generated token file others may
// read, or that was emptied, stops the start with the file named; a
// configured token is used as is and nothing is generated.
func TestAdminTokenRefusesUnsafeFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := tokenConfig(t, dir, "")
	path := cfg.GeneratedTokenPath()
	if err := os.WriteFile(path, []byte("0123456789abcdef0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	if _, _, _, err := AdminToken(cfg); err == nil || !strings.Contains(err.Error(), "admin API: generated token "+path+": "+path+" has mode 0644: other users may read or write it (chmod 600 "+path+"): unsafe; or delete it for a new token") {
		t.Fatalf("world-readable token file: %v", err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := AdminToken(cfg); err == nil || !strings.Contains(err.Error(), "weak admin token: 0 bytes") {
		t.Fatalf("empty token file: %v", err)
	}

	dir = t.TempDir()
	cfg = tokenConfig(t, dir, "admin: {token: 0123456789abcdef}")
	tok, path, created, err := AdminToken(cfg)
	if err != nil || tok != "0123456789abcdef" || path != "" || created {
		t.Fatalf("configured token: %q %q %v %v", tok, path, created, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a token was generated beside a configured one: %v", entries)
	}
}

// A FIFO at the token's path (the generated one or admin.token_file) is
// refused at once: reading it would hang the start.
func TestAdminTokenFIFORefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "token-fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	generated := tokenConfig(t, dir, "")
	if err := syscall.Mkfifo(generated.GeneratedTokenPath(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, start := range []func() error{
		func() error { _, _, _, err := AdminToken(generated); return err },
		func() error {
			_, err := config.Parse(filepath.Join(dir, "router.yaml"),
				[]byte("router_id: r1\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\nadmin: {token_file: "+fifo+"}\n"))
			return err
		},
	} {
		done := make(chan error, 1)
		go func() { done <- start() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "FIFO") || !strings.Contains(err.Error(), "not a regular file") {
				t.Fatalf("token file as a FIFO: %v", err)
			}
		case <-time.After(time.Minute): // a blocking open never returns
			t.Fatal("a FIFO at the token path hangs the start")
		}
	}
}
