// Package brokertest gives tests the real brokers of testdata/brokers.sh.
//
// `make test` starts the brokers once for the whole run; a test asks for
// what it needs with Require, which starts missing brokers itself (slow the
// first time, instant when they run) so `go test ./...` works alone too.
// Integration tests are skipped with -short.
package brokertest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// Broker is one running broker of the harness.
type Broker struct {
	Name    string // rabbit1, proton1, pyproton1
	Kind    string // rabbitmq or proton
	URL     string // amqp://127.0.0.1:port
	MgmtURL string // RabbitMQ management URL; empty otherwise
	PID     int
}

// Config returns a broker configuration for b, with RabbitMQ's guest login.
func (b Broker) Config() amqp.BrokerConfig {
	c := amqp.BrokerConfig{Name: b.Name, URLs: []string{b.URL}, Profile: b.Kind}
	if b.Kind == "rabbitmq" {
		c.Username, c.Password = "guest", "guest"
		c.Management.URL = b.MgmtURL
	}
	return c
}

// Addr returns host:port of the AMQP listener.
func (b Broker) Addr() string {
	u, _ := url.Parse(b.URL)
	return u.Host
}

var mu sync.Mutex // serialises harness calls within one test binary

// Dir is where the harness keeps its state.
func Dir() string {
	if d := os.Getenv("FEDROUTER_BROKERS_DIR"); d != "" {
		return d
	}
	return "/tmp/fedrouter-brokers"
}

// Script returns the path of testdata/brokers.sh.
func Script() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "testdata", "brokers.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testdata/brokers.sh not found above the working directory")
		}
		dir = parent
	}
}

func run(t testing.TB, args ...string) string {
	t.Helper()
	script, err := Script()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("brokers.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Registered reads the harness registry.
func Registered() (map[string]Broker, error) {
	f, err := os.Open(filepath.Join(Dir(), "brokers.env"))
	if os.IsNotExist(err) {
		return map[string]Broker{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: nothing is lost on a close error
	out := map[string]Broker{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var b Broker
		var mgmt string
		if _, err := fmt.Sscanf(sc.Text(), "%s %s %s %s %d", &b.Name, &b.Kind, &b.URL, &mgmt, &b.PID); err != nil {
			return nil, fmt.Errorf("brokers.env:%d: %w", line, err)
		}
		if mgmt != "-" {
			b.MgmtURL = mgmt
		}
		out[b.Name] = b
	}
	return out, sc.Err()
}

func listening(b Broker) bool {
	c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
	if err != nil {
		return false
	}
	_ = c.Close() // a probe: it connected, which is all we asked
	return true
}

// Require returns the named brokers (rabbit1..rabbit4, proton1..,
// pyproton1.., qpidd1..qpidd4), starting any that are not running. Skipped
// with -short, and without the shared qpidd build outside CI (qpidd.go).
func Require(t testing.TB, names ...string) []Broker {
	t.Helper()
	if testing.Short() {
		t.Skip("needs real brokers; skipped with -short")
	}
	mu.Lock()
	defer mu.Unlock()
	var qpidds []int
	var rest []string
	for _, n := range names {
		var i int
		if sscan(n, "qpidd%d", &i) {
			qpidds = append(qpidds, i)
		} else {
			rest = append(rest, n)
		}
	}
	qb := requireQpidd(t, qpidds)
	rb := requireHarness(t, rest)
	out := make([]Broker, len(names))
	for i, n := range names {
		if strings.HasPrefix(n, "qpidd") {
			out[i], qb = qb[0], qb[1:]
		} else {
			out[i], rb = rb[0], rb[1:]
		}
	}
	return out
}

// requireHarness is Require for the brokers of testdata/brokers.sh; the
// caller holds mu.
func requireHarness(t testing.TB, names []string) []Broker {
	t.Helper()
	if len(names) == 0 {
		return nil
	}
	reg, err := Registered()
	if err != nil {
		t.Fatal(err)
	}
	missing := false
	for _, n := range names {
		if b, ok := reg[n]; !ok || !listening(b) {
			missing = true
		}
	}
	if missing {
		nr, np, ny := 0, 0, 0
		for _, n := range names {
			var i int
			switch {
			case sscan(n, "rabbit%d", &i):
				nr = max(nr, i)
			case sscan(n, "pyproton%d", &i):
				ny = max(ny, i)
			case sscan(n, "proton%d", &i):
				np = max(np, i)
			default:
				t.Fatalf("brokertest: unknown broker name %q", n)
			}
		}
		run(t, "start", "-r", fmt.Sprint(nr), "-p", fmt.Sprint(np), "-y", fmt.Sprint(ny))
		if reg, err = Registered(); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]Broker, len(names))
	for i, n := range names {
		b, ok := reg[n]
		if !ok {
			t.Fatalf("brokertest: %s not registered after start", n)
		}
		out[i] = b
	}
	return out
}

func sscan(s, format string, i *int) bool {
	n, err := fmt.Sscanf(s, format, i)
	return err == nil && n == 1 && fmt.Sprintf(format, *i) == s
}

// Kill kills a broker with SIGKILL.
func Kill(t testing.TB, name string) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	run(t, "kill", name)
}

// Restart starts a killed broker again on the same ports and data.
func Restart(t testing.TB, name string) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	run(t, "restart", name)
}

// Eventually polls f every interval until it returns nil or the deadline
// passes, then fails the test with f's last error.
func Eventually(t testing.TB, timeout, interval time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}

// UniqueName returns a name unique to this test run, for queues and routes.
func UniqueName(t testing.TB, prefix string) string {
	n := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("%s.%s.%d", prefix, n, time.Now().UnixNano()%1e9)
}
