package brokertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
)

// PrivateQpidd is a strict qpidd of one test's own (testdata/qpidd.sh),
// for tests that may crash a broker: never one of the shared qpidd1..4,
// which other tests use at the same time.
type PrivateQpidd struct {
	Config famqp.BrokerConfig
	n      int
	state  string // TMPDIR given to qpidd.sh: its pid file and log are under it
	script string
}

// privateQpiddFirst is the lowest instance number tried: ports from 5920
// are left to private brokers (qpidd1..4 are 5901..5904).
const privateQpiddFirst = 20

// StartPrivateQpidd starts a strict qpidd on the first free port from
// 5920 and stops it at cleanup. It skips, as Require does, where the
// shared qpidd build is absent (fails under CI).
func StartPrivateQpidd(t testing.TB) *PrivateQpidd {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (needs a qpidd)")
	}
	script, err := qpiddScript()
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for n := privateQpiddFirst; n < privateQpiddFirst+40; n++ {
		b := qpiddBroker(n)
		if listening(b) {
			continue
		}
		if _, err := runQpiddScript(ctx, script, []string{"TMPDIR=" + state}, "start", strconv.Itoa(n)); err != nil {
			if errors.Is(err, errQpiddMissing) && os.Getenv("CI") == "" {
				t.Skip(err)
			}
			if listening(b) { // taken meanwhile by someone else's
				continue
			}
			t.Fatal(err)
		}
		q := &PrivateQpidd{n: n, state: state, script: script, Config: famqp.BrokerConfig{
			Name: fmt.Sprintf("private-qpidd%d", n), URLs: []string{b.URL}, Profile: "qpid",
		}}
		t.Cleanup(func() {
			sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
			defer scancel()
			if _, err := runQpiddScript(sctx, script, []string{"TMPDIR=" + state}, "stop", strconv.Itoa(n)); err != nil {
				t.Errorf("stopping %s: %v", q.Config.Name, err)
			}
		})
		return q
	}
	t.Fatal("no free port for a private qpidd in 5920..5959")
	return nil
}

// Kill kills the broker with SIGKILL, as a crash would (its queues are
// lost: no store).
func (q *PrivateQpidd) Kill(t testing.TB) { q.run(t, "kill9") }

// Restart starts the broker again on its port.
func (q *PrivateQpidd) Restart(t testing.TB) { q.run(t, "start") }

func (q *PrivateQpidd) run(t testing.TB, cmd string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := runQpiddScript(ctx, q.script, []string{"TMPDIR=" + q.state}, cmd, strconv.Itoa(q.n)); err != nil {
		t.Fatal(err)
	}
}

// Gone is nil while the broker's process lives and its port answers;
// otherwise it says so, with the end of the broker's log.
func (q *PrivateQpidd) Gone() error {
	return qpiddGone(q.Config.Name, filepath.Join(q.state, "fedrouter-qpidd", strconv.Itoa(q.n)), QpiddPortBase+q.n)
}

// QpiddGone says whether shared qpidd N (testdata/qpidd.sh's, state under
// ${TMPDIR:-/tmp}) is gone: nil while its process lives and its port
// answers. For a wait that timed out on a qpidd: a crashed broker
// (docs/brokers.md, qpidd) is then named, not left a mystery.
func QpiddGone(n int) error {
	root := os.Getenv("TMPDIR")
	if root == "" {
		root = "/tmp"
	}
	return qpiddGone(fmt.Sprintf("qpidd%d", n), filepath.Join(root, "fedrouter-qpidd", strconv.Itoa(n)), QpiddPortBase+n)
}

func qpiddGone(name, dir string, port int) error {
	raw, err := os.ReadFile(filepath.Join(dir, "qpidd.pid"))
	if err != nil {
		return fmt.Errorf("%s: no pid file (%w)", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("%s: pid file holds %q", name, raw)
	}
	if !processAlive(pid) {
		return fmt.Errorf("%s (pid %d) is gone: segfault? (dmesg; the end of its log: %s)", name, pid, logTail(filepath.Join(dir, "qpidd.log")))
	}
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		return fmt.Errorf("%s (pid %d) runs but its port %d does not answer: %w", name, pid, port, err)
	}
	_ = c.Close() // a probe
	return nil
}

// processAlive: pid exists and is not a zombie (containers whose PID 1
// never reaps keep crashed daemons as zombies).
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: the signal check is all there is
	}
	// The state follows the command name's closing parenthesis.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func logTail(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}

// Gone says, for a shared qpidd (qpidd1..4), whether it is gone (as
// QpiddGone); nil for any other broker. For a failed test's report.
func (b Broker) Gone() error {
	var n int
	if b.Kind != "qpid" {
		return nil
	}
	if _, err := fmt.Sscanf(b.Name, "qpidd%d", &n); err != nil {
		return nil // not one of testdata/qpidd.sh's numbered peers
	}
	return QpiddGone(n)
}
