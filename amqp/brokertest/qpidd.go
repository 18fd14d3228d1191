package brokertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
)

// qpidd test peers (testdata/qpidd.sh, wrapping the shared qpidd build):
// qpidd1, qpidd2 and qpidd4 are strict brokers, qpidd3 creates queues on
// demand.
// Their binaries live outside the repository, so a machine without them
// skips the tests that need them — except under CI (CI set, as .ci/run
// does), where a missing qpidd is a failure: CI must run them.

// QpiddPortBase is qpidd N's AMQP port minus N.
const QpiddPortBase = 5900

func qpiddScript() (string, error) {
	s, err := Script()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(s), "qpidd.sh"), nil
}

// qpiddRun runs testdata/qpidd.sh; errQpiddMissing when the shared build
// is absent.
func qpiddRun(ctx context.Context, args ...string) (string, error) {
	script, err := qpiddScript()
	if err != nil {
		return "", err
	}
	return runQpiddScript(ctx, script, nil, args...)
}

// runQpiddScript runs script with env added to the environment.
func runQpiddScript(ctx context.Context, script string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return string(out), fmt.Errorf("%w: %s", errQpiddMissing, strings.TrimSpace(string(out)))
	}
	if err != nil {
		return string(out), fmt.Errorf("qpidd.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

var errQpiddMissing = errors.New("qpidd test peer not installed")

func qpiddBroker(n int) Broker {
	return Broker{Name: fmt.Sprintf("qpidd%d", n), Kind: "qpid", URL: fmt.Sprintf("amqp://127.0.0.1:%d", QpiddPortBase+n)}
}

// requireQpidd starts qpidd instances ns that do not listen; the caller
// holds mu.
func requireQpidd(t testing.TB, ns []int) []Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out := make([]Broker, 0, len(ns))
	for _, n := range ns {
		b := qpiddBroker(n)
		if !listening(b) {
			if _, err := qpiddRun(ctx, "start", fmt.Sprint(n)); err != nil {
				if errors.Is(err, errQpiddMissing) && os.Getenv("CI") == "" { // as storetest.URL
					t.Skip(err)
				}
				t.Fatal(err)
			}
		}
		out = append(out, b)
	}
	return out
}

// KillQpidd kills qpidd N with SIGKILL (all its queues are lost: no store).
func KillQpidd(t testing.TB, n int) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if _, err := qpiddRun(t.Context(), "kill9", fmt.Sprint(n)); err != nil {
		t.Fatal(err)
	}
}

// QpidManagement returns QMF access to the qpidd broker of cfg.
func QpidManagement(t testing.TB, cfg famqp.BrokerConfig) *famqp.QpidManagement {
	t.Helper()
	m, err := famqp.NewQpidManagement(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// qpidDeclare creates, on qpidd, exchange ex of kind (unless ex is "") and
// durable queue q (unless q is "") bound to it with key; all of it is
// deleted at cleanup.
func qpidDeclare(t testing.TB, cfg famqp.BrokerConfig, ex, kind, q, key string) {
	t.Helper()
	m := QpidManagement(t, cfg)
	ctx := t.Context()
	if ex != "" {
		if err := m.Create(ctx, "exchange", ex, map[string]any{"exchange-type": kind, "durable": true}); err != nil {
			t.Fatal(err)
		}
	}
	if q != "" {
		if err := m.Create(ctx, "queue", q, map[string]any{"durable": true}); err != nil {
			t.Fatal(err)
		}
	}
	if ex != "" && q != "" {
		if err := m.Create(ctx, "binding", ex+"/"+q+"/"+key, map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// After t.Context() has ended; best effort, as in DeclareQueue.
		if q != "" {
			_ = m.Delete(context.Background(), "queue", q)
		}
		if ex != "" {
			_ = m.Delete(context.Background(), "exchange", ex)
		}
	})
}
