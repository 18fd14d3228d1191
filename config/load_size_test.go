package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A configuration over 4 MiB is refused before it is decoded (a 100 MB
// file took 686 MB); a FIFO in its place is refused instead of hanging.
func TestLoadBoundsTheFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	body := "router_id: r1\n# " + strings.Repeat("x", MaxConfigSize) + "\n"
	if err := os.WriteFile(big, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), big+" is over 4194304 bytes (4 MiB)") {
		t.Fatalf("a 4 MiB+ config: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is a FIFO, not a regular file") {
			t.Fatalf("a FIFO config: %v", err)
		}
	case <-time.After(time.Minute): // a blocking open never returns
		t.Fatal("a FIFO config hangs the load")
	}
}
