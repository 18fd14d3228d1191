package router

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The Unix socket's peer check (Linux, SO_PEERCRED): a process of another
// user that reached the socket (here through a directory and socket left
// open on purpose; the router's own are 0700 and 0600) is closed without
// an answer; the router's own user gets one.
func TestSocketPeerOfAnotherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a client as another uid needs root (CI runs as root)")
	}
	const py = "/usr/bin/python3" // the system's: another user may run it (a pyenv shim under /root it may not)
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 drives the other user's client")
	}
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} { // TempDir's parent is 0700 too
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("served")) })}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(&peerListener{Listener: ln}) }()
	defer func() { _ = srv.Close(); <-done }()

	client := func(uid uint32) string {
		script := `import socket,sys
s=socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1])
out=b""
try:
    s.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
except OSError:  # closed by the server already: refused
    sys.exit(0)
while True:
    try:
        b=s.recv(4096)
    except OSError:
        break
    if not b: break
    out+=b
sys.stdout.write(out.decode(errors="replace"))`
		cmd := exec.Command(py, "-c", script, path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client as uid %d: %v\n%s", uid, err, stderr.String())
		}
		return string(out)
	}
	if got := client(4242); got != "" {
		t.Fatalf("a client of uid 4242 got an answer: %q", got)
	}
	if got := client(0); !strings.Contains(got, "served") {
		t.Fatalf("a client of the router's uid: %q", got)
	}
}
