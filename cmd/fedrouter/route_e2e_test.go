package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// routerProc is a `fedrouter run` process under test.
type routerProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	out    *syncBuffer
	config string              // its configuration file: the CLI finds the token from it
	admin  string              // scheme://host:port of its admin API
	client *adminclient.Client // made by api, on first use
}

var adminField = regexp.MustCompile(`"admin":"([^"]+)","admin_scheme":"([^"]+)".*"message":"fedrouter started"`)

func startRouter(t *testing.T, config string) *routerProc {
	t.Helper()
	cmd := exec.Command(binary(t), "run", "--config", config)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &routerProc{t: t, cmd: cmd, out: out, config: config}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		m := adminField.FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("router did not report its admin address:\n%s", out.String())
		}
		p.admin = m[2] + "://" + m[1]
		return nil
	})
	return p
}

// cli runs a fedrouter command against the router, as an operator on its
// host does (FEDROUTER_CONFIG names the router's file: the CLI reads the
// generated token from beside its state file); it returns the combined
// output and the exit code.
func (p *routerProc) cli(args ...string) (string, int) {
	p.t.Helper()
	cmd := exec.Command(binary(p.t), args...)
	cmd.Env = append(os.Environ(), "FEDROUTER_ROUTER="+p.admin, "FEDROUTER_CONFIG="+p.config)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatalf("%v: %v", args, err)
	}
	return string(out), code
}

func (p *routerProc) routes() []routes.Status {
	p.t.Helper()
	out, code := p.cli("route", "list", "--json")
	if code != 0 {
		p.t.Fatalf("route list: exit %d: %s", code, out)
	}
	var sts []routes.Status
	if err := json.Unmarshal([]byte(out), &sts); err != nil {
		p.t.Fatalf("route list --json: %v\n%s", err, out)
	}
	return sts
}

// A durable queue route added with the CLI, the router killed with -9 in
// the middle of a stream and started again: the route comes back from the
// state file and every message arrives, duplicates within the window.
func TestRouterKilledMidStreamLosesNothing(t *testing.T) {
	t.Parallel() // each data path a parallel subtest
	for _, dataPath := range []string{routes.DataPathEngine} {
		t.Run(dataPath, func(t *testing.T) {
			parallelE2E(t)
			routerKilledMidStream(t, dataPath)
		})
	}
}

func routerKilledMidStream(t *testing.T, dataPath string) {
	const n, credit = 20000, 200
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	src, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareQueue(t, bs[0].Config(), src)
	brokertest.DeclareExchangeQueue(t, bs[1].Config(), ex, "fanout", dq, "")

	dir := t.TempDir()
	config := pairConfigOn(t, dir, "e2e", bs, "data_path: "+dataPath+"\n")
	p := startRouter(t, config)

	// qpid-route's verbs: add, duplicate, refused self-route.
	if out, code := p.cli("queue", "add", "-d", "--credit", fmt.Sprint(credit), "r2", "r1", ex, src); code != 0 {
		t.Fatalf("queue add: exit %d: %s", code, out)
	}
	if out, code := p.cli("queue", "add", "-d", "r2", "r1", ex, src); code != 0 || !strings.Contains(out, "Duplicate route - ignoring") {
		t.Fatalf("duplicate add: exit %d: %s", code, out)
	}
	if out, code := p.cli("queue", "add", "r1", "r1", ex, src); code == 0 || !strings.Contains(out, "same broker") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("self route: exit %d, want one line of error: %s", code, out)
	}
	if out, code := p.cli("queue", "add", "r2"); code != 2 {
		t.Fatalf("too few args: exit %d: %s", code, out)
	}
	onPath := operational
	if dataPath == routes.DataPathEngine {
		onPath = onEngine
	}
	waitRoute(t, p, onPath)

	brokertest.SendAll(t, brokertest.Session(t, brokertest.Dial(t, bs[0].Config(), amqp.ConnOptions{})), "/amq/queue/"+src, 500, n, brokertest.Numbered)
	p.kill9After(n / 4)

	p = startRouter(t, config)
	st := waitRoute(t, p, func(st routes.Status) error {
		if st.Origin != routes.OriginRuntime || !st.Spec.Durable {
			return fmt.Errorf("restored route %+v", st)
		}
		return nil
	})
	got := brokertest.Collect(t, brokertest.Dial(t, bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+dq, n, 60*time.Second)
	dups := brokertest.CheckNoLoss(t, got, n)
	t.Logf("router kill -9 mid-stream (%s): %d messages, %d duplicates (credit %d)", dataPath, n, dups, credit)
	if dups > credit {
		t.Fatalf("%d duplicates, more than the in-flight window %d", dups, credit)
	}

	// The views.
	if out, _ := p.cli("link", "list"); !regexp.MustCompile(`(?m)^r1\s+r2\s+Operational\s+1`).MatchString(out) {
		t.Errorf("link list:\n%s", out)
	}
	if out, _ := p.cli("route", "map"); !strings.Contains(out, fmt.Sprintf("r2(ex=%s) <= r1(queue=%s)", ex, src)) {
		t.Errorf("route map:\n%s", out)
	}
	// Delete by qpid-route's arguments; the state file forgets it.
	if out, code := p.cli("queue", "del", "r2", "r1", ex, src); code != 0 {
		t.Fatalf("queue del: exit %d: %s", code, out)
	}
	if rs := p.routes(); len(rs) != 0 {
		t.Fatalf("routes after del: %+v", rs)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	// A clean stop folds the journal into the state file.
	state, err := os.ReadFile(filepath.Join(dir, "fedrouter-e2e.routes.json"))
	if err != nil || strings.Contains(string(state), st.ID) || strings.Contains(string(state), src) {
		t.Fatalf("state file after del: %v\n%s", err, state)
	}
}

// pairConfig writes, in dir, the configuration of router id with brokers
// r1 and r2 (bs[0], bs[1]), its admin API on a free loopback port with a
// generated token, and its state file beside it; it returns the path.
func pairConfig(t *testing.T, dir, id string, bs []brokertest.Broker) string {
	t.Helper()
	return pairConfigOn(t, dir, id, bs, "")
}

// pairConfigOn is pairConfig with extra YAML at the end.
func pairConfigOn(t *testing.T, dir, id string, bs []brokertest.Broker, extra string) string {
	t.Helper()
	config := filepath.Join(dir, "router.yaml")
	yaml := fmt.Sprintf(`router_id: %s
brokers:
  - {name: r1, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
  - {name: r2, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
reconnect: {min: 100ms, max: 1s}
admin: {listen: "127.0.0.1:0"}
log: {level: info, format: json}
`, id, bs[0].URL, bs[0].MgmtURL, bs[1].URL, bs[1].MgmtURL) + extra
	yaml = withAdminPort(t, yaml)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// waitRoute waits until the router's only route satisfies ok.
func waitRoute(t *testing.T, p *routerProc, ok func(routes.Status) error) routes.Status {
	t.Helper()
	var st routes.Status
	brokertest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		rs := p.routes()
		if len(rs) != 1 {
			return fmt.Errorf("%d routes", len(rs))
		}
		st = rs[0]
		return ok(st)
	})
	return st
}
