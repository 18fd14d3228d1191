package brokertest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/qpidd.sh finds the shared qpidd build: at FEDROUTER_QPIDD_DIR
// when set (and a wrong setting is an error, not a skip), else beside the
// repository; a checkout without it reports the build missing, which the
// tests skip on outside CI.
func TestQpiddScriptLocatesSharedBuild(t *testing.T) {
	script, err := qpiddScript()
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	// A clone of the script where nothing sits beside the repository.
	root := filepath.Join(t.TempDir(), "a", "b", "clone")
	copyScript := filepath.Join(root, "testdata", "qpidd.sh")
	if err := os.MkdirAll(filepath.Dir(copyScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyScript, body, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runQpiddScript(t.Context(), copyScript, []string{"FEDROUTER_QPIDD_DIR=", "FEDROUTER_QPIDD_FALLBACK="}, "dir"); !errors.Is(err, errQpiddMissing) {
		t.Errorf("no shared build: %v, want errQpiddMissing", err)
	}
	out, err := runQpiddScript(t.Context(), copyScript, []string{"FEDROUTER_QPIDD_DIR=" + filepath.Join(root, "nowhere"), "FEDROUTER_QPIDD_FALLBACK="}, "dir")
	if err == nil || errors.Is(err, errQpiddMissing) || !strings.Contains(out, "holds no executable qpidd.sh") {
		t.Errorf("wrong FEDROUTER_QPIDD_DIR: %v (%q), want a plain error", err, out)
	}
	// The shared layout: ../shared/peers/qpidd beside the repository root.
	shared := filepath.Join(root, "..", "shared", "peers", "qpidd")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "qpidd.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = runQpiddScript(t.Context(), copyScript, []string{"FEDROUTER_QPIDD_DIR=", "FEDROUTER_QPIDD_FALLBACK="}, "dir")
	if want, _ := filepath.Abs(shared); err != nil || strings.TrimSpace(out) != filepath.Clean(want) {
		t.Errorf("beside the repository: %v, %q, want %s", err, out, want)
	}
}

// Gone: nil for a running shared qpidd and for other brokers; an error
// naming the broker for a qpidd with no process (no pid file here).
func TestIntegrationQpiddGone(t *testing.T) {
	b := Require(t, "qpidd1")[0]
	if err := b.Gone(); err != nil {
		t.Fatalf("qpidd1 runs: %v", err)
	}
	if err := (Broker{Name: "rabbit1", Kind: "rabbitmq"}).Gone(); err != nil {
		t.Fatalf("not a qpidd: %v", err)
	}
	t.Setenv("TMPDIR", t.TempDir()) // no state there: as a qpidd whose pid file is gone
	if err := b.Gone(); err == nil || !strings.Contains(err.Error(), "qpidd1") {
		t.Fatalf("qpidd1 with no state: %v", err)
	}
}
