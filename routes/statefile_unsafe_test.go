package routes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// victim is a file outside the state directory that an attacker points
// the router's files at; it must come out as it went in.
func victim(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "victim")
	const content = "root:x:0:0:a one-line file the router must not touch\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Fatalf("the file the link pointed at was changed: %q %v", b, err)
		}
	}
}

// The journal as a symbolic link, present at the start or planted after
// it: the start, or the first durable add, fails with the path named; the
// file it points at is neither truncated nor appended to.
func TestJournalSymlinkNotFollowed(t *testing.T) {
	target, unchanged := victim(t)
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.Symlink(target, path+JournalSuffix); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t, path)
	if err := m.Restore(nil); err == nil || !strings.Contains(err.Error(), path+JournalSuffix+" is a symbolic link") {
		t.Fatalf("start over a symlinked journal: %v", err)
	}
	unchanged()

	path = filepath.Join(t.TempDir(), "state.json")
	m = newTestManager(t, path)
	if err := m.Restore(nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path+JournalSuffix); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(context.Background(), testSpec(0)); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("durable add over a symlinked journal: %v", err)
	}
	unchanged()
	if len(m.List()) != 0 {
		t.Fatalf("a route that could not be made durable was kept: %v", idsOf(m.List()))
	}
}

// A dangling symbolic link at the journal's name: nothing is created
// where it points, at the start or on a durable add.
func TestJournalDanglingSymlinkCreatesNothing(t *testing.T) {
	target := filepath.Join(t.TempDir(), "created-by-the-router")
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.Symlink(target, path+JournalSuffix); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t, path)
	if err := m.Restore(nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("start over a dangling journal link: %v", err)
	}
	if _, err := m.Add(context.Background(), testSpec(0)); err == nil {
		t.Fatal("durable add through a dangling journal link succeeded")
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("the router created the link's target: %v", err)
	}
}

// A state file another user could have written — mode 0666 and owned by
// another uid (the case), or either alone — is refused: its
// routes are not run.
func TestStateFileOfOthersRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown to another uid needs root (CI runs as root)")
	}
	for _, tc := range []struct {
		name string
		mode os.FileMode
		uid  int
		want string
	}{
		{"issue: 0666, another uid", 0o666, 4242, "owned by uid 4242"},
		{"another uid, 0600", 0o600, 4242, "owned by uid 4242"},
		{"own, 0666", 0o666, 0, "has mode 0666: other users may read or write it"},
		{"own, 0640", 0o640, 0, "has mode 0640"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			if err := SaveState(path, []Spec{testSpec(0)}); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, tc.uid, tc.uid); err != nil {
				t.Fatal(err)
			}
			m := newTestManager(t, path)
			err := m.Restore(nil)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start: %v, want the file named and %q", err, tc.want)
			}
			if len(m.List()) != 0 {
				t.Fatalf("routes restored from a refused file: %v", idsOf(m.List()))
			}
		})
	}
}

// A state directory others may write to (/tmp is one) is refused before
// anything in it is read.
func TestStateDirWritableByOthersRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o777 | os.ModeSticky, 0o770, 0o702} {
		dir := t.TempDir()
		path := filepath.Join(dir, "state.json")
		if err := SaveState(path, []Spec{testSpec(0)}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		m := newTestManager(t, path)
		err := m.Restore(nil)
		if err == nil || !strings.Contains(err.Error(), "directory "+dir+" has mode") {
			t.Fatalf("directory mode %v: %v", mode, err)
		}
		if len(m.List()) != 0 {
			t.Fatalf("directory mode %v: routes restored: %v", mode, idsOf(m.List()))
		}
		if err := SaveState(path, nil); err == nil {
			t.Fatalf("directory mode %v: a save went through", mode)
		}
	}
}

// A FIFO at the state file's or the journal's name is refused at once
// instead of hanging the start.
func TestStateFIFORefused(t *testing.T) {
	for _, name := range []string{"state.json", "state.json" + JournalSuffix} {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
		m := newTestManager(t, filepath.Join(dir, "state.json"))
		done := make(chan error, 1)
		go func() { done <- m.Restore(nil) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute): // an open that blocks on the FIFO never returns
			t.Fatalf("%s as a FIFO: the start hangs", name)
		}
		if err == nil || !strings.Contains(err.Error(), name+" is a FIFO, not a regular file") {
			t.Fatalf("%s as a FIFO: %v", name, err)
		}
	}
}
