package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/routes"
)

// reloadRig is a router between rabbit1 (sources) and rabbit2
// (destinations) whose configuration file the test rewrites.
type reloadRig struct {
	t         *testing.T
	bs        []brokertest.Broker
	dir       string
	config    string
	p         *routerProc
	tokenFile string // the admin token in force (write sets it: the test reloads each file it writes)
	clients   map[string]*adminclient.Client
	r2URL     string // r2's URL when not the registry's
	admin     string // admin.listen, quoted: a free port chosen at the first write
	// name → source queue, destination exchange and the queue bound to it
	q, ex, dq map[string]string
}

func newReloadRig(t *testing.T) *reloadRig {
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	g := &reloadRig{t: t, bs: bs, dir: t.TempDir(), q: map[string]string{}, ex: map[string]string{}, dq: map[string]string{}}
	g.config = filepath.Join(g.dir, "router.yaml")
	for _, n := range []string{"keep", "remove", "change", "add"} {
		g.q[n] = brokertest.UniqueName(t, "h-reload.src."+n)
		g.ex[n] = brokertest.UniqueName(t, "h-reload.ex."+n)
		g.dq[n] = brokertest.UniqueName(t, "h-reload.dq."+n)
		brokertest.DeclareQueue(t, bs[0].Config(), g.q[n])
		brokertest.DeclareExchangeQueue(t, bs[1].Config(), g.ex[n], "fanout", g.dq[n], "")
	}
	return g
}

// write writes the configuration: the routes named (credit per name),
// the admin token file given, log level, and extra lines at the end.
func (g *reloadRig) write(routesCredit map[string]int, tokenFile, level, extra string) {
	g.t.Helper()
	var rs strings.Builder
	for _, n := range []string{"keep", "remove", "change", "add"} {
		if c, ok := routesCredit[n]; ok {
			fmt.Fprintf(&rs, "  - {kind: queue, src: r1, dest: r2, queue: %q, exchange: %q, credit: %d}\n", g.q[n], g.ex[n], c)
		}
	}
	yaml := fmt.Sprintf(`router_id: h-reload
brokers:
  - {name: r1, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
  - {name: r2, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
reconnect: {min: 100ms, max: 1s}
admin: {listen: "127.0.0.1:0", token_file: %q}
log: {level: %s, format: json}
routes:
%s%s`, g.bs[0].URL, g.bs[0].MgmtURL, cmp.Or(g.r2URL, g.bs[1].URL), g.bs[1].MgmtURL, tokenFile, level, rs.String(), extra)
	if g.admin == "" { // one port for the rig's life: admin.listen does not reload
		g.admin = withAdminPort(g.t, `"127.0.0.1:0"`)
	}
	yaml = strings.Replace(yaml, `"127.0.0.1:0"`, g.admin, 1)
	if err := os.WriteFile(g.config, []byte(yaml), 0o600); err != nil {
		g.t.Fatal(err)
	}
	g.tokenFile = tokenFile
}

func (g *reloadRig) token(name, tok string) string {
	g.t.Helper()
	path := filepath.Join(g.dir, name)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		g.t.Fatal(err)
	}
	return path
}

// byQueue is the router's routes by their source queue's rig name.
func (g *reloadRig) byQueue() map[string]routes.Status {
	out := map[string]routes.Status{}
	// Through the API, not the CLI: the CLI reads the file, which the test
	// makes bad on purpose.
	sts, err := g.client().Routes(g.t.Context())
	if err != nil {
		g.t.Fatal(err)
	}
	for _, st := range sts {
		for n, q := range g.q {
			if st.Spec.Queue == q {
				out[n] = st
			}
		}
	}
	return out
}

func (g *reloadRig) waitRoutes(names ...string) map[string]routes.Status {
	g.t.Helper()
	var rs map[string]routes.Status
	brokertest.Eventually(g.t, 60*time.Second, 50*time.Millisecond, func() error {
		rs = g.byQueue()
		if len(rs) != len(names) {
			return fmt.Errorf("routes %v, want %v", rs, names)
		}
		for _, n := range names {
			if rs[n].State != routes.StateOperational {
				return fmt.Errorf("route %s: %s %s", n, rs[n].State, rs[n].LastError)
			}
		}
		return nil
	})
	return rs
}

// produce sends Numbered messages [from, to) to addr one at a time, each
// waiting for its outcome (a steady stream, not a burst), counting them.
func produce(ctx context.Context, s *goamqp.Session, addr string, from, to int, sent *atomic.Int64) error {
	snd, err := s.NewSender(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer func() {
		// RabbitMQ answers a detach lazily: go-amqp's Close would wait
		// forever; the session's end reclaims the link.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = snd.Close(cctx)
		cancel()
	}()
	for i := from; i < to; i++ {
		if err := snd.Send(ctx, brokertest.Numbered(i), nil); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		sent.Add(1)
	}
	return nil
}

func (g *reloadRig) sendN(name string, from, to int) {
	g.t.Helper()
	var n atomic.Int64
	s := brokertest.Session(g.t, brokertest.Dial(g.t, g.bs[0].Config(), amqp.ConnOptions{}))
	if err := produce(g.t.Context(), s.GoAMQP(), "/amq/queue/"+g.q[name], from, to, &n); err != nil {
		g.t.Fatal(err)
	}
}

// SIGHUP under load: a producer streams into the unchanged route while the
// file adds one route, removes one and changes one. The unchanged route
// keeps its links (its state's since does not move) and delivers every
// message once; the added route runs, the removed one stops, the changed
// one runs with its new credit.
func TestReloadUnderLoad(t *testing.T) {
	parallelE2E(t)
	const n = 6000
	g := newReloadRig(t)
	tok1 := g.token("token1", "reload-test-token-one-0123456789")
	g.write(map[string]int{"keep": 200, "remove": 200, "change": 200}, tok1, "info", "")
	g.p = startRouter(t, g.config)
	before := g.waitRoutes("keep", "remove", "change")

	// The steady stream into the unchanged route.
	var sent atomic.Int64
	errc := make(chan error, 1)
	s := brokertest.Session(t, brokertest.Dial(t, g.bs[0].Config(), amqp.ConnOptions{}))
	go func() { errc <- produce(t.Context(), s.GoAMQP(), "/amq/queue/"+g.q["keep"], 0, n, &sent) }()
	g.sendN("remove", 0, 100)
	g.sendN("change", 0, 100)
	brokertest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		if f := g.byQueue()["keep"].Forwarded; f < n/6 {
			return fmt.Errorf("keep forwarded %d", f)
		}
		return nil
	})

	g.write(map[string]int{"keep": 200, "change": 300, "add": 200}, tok1, "info", "")
	atHUP := sent.Load()
	if err := g.p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(g.p.out.String(), `"message":"configuration reloaded"`) {
			return errors.New("no reload line yet")
		}
		return nil
	})
	afterHUP := sent.Load()
	after := g.waitRoutes("keep", "change", "add")
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if afterHUP >= n || atHUP == afterHUP && atHUP >= n {
		t.Logf("note: the producer had sent %d of %d at the reload's answer", afterHUP, n)
	}
	line := logLine(t, g.p.out.String(), "configuration reloaded")
	for _, want := range []string{`"routes_added":1`, `"routes_removed":1`, `"routes_changed":1`, `"routes_unchanged":1`} {
		if !strings.Contains(line, want) {
			t.Errorf("reload line lacks %s: %s", want, line)
		}
	}

	// The unchanged route: same links, every message once.
	got := brokertest.Collect(t, brokertest.Dial(t, g.bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+g.dq["keep"], n, 60*time.Second)
	dups := brokertest.CheckNoLoss(t, got, n)
	keep := g.byQueue()["keep"]
	t.Logf("reload under load: %d messages sent into the unchanged route (%d before the SIGHUP, %d by the reload's line), %d received, 0 lost, %d duplicated; its forwarded %d; since %s -> %s",
		n, atHUP, afterHUP, len(got), dups, keep.Forwarded, before["keep"].Since.Format(time.RFC3339Nano), keep.Since.Format(time.RFC3339Nano))
	if dups != 0 || len(got) != n {
		t.Fatalf("unchanged route: %d received for %d sent, %d duplicates", len(got), n, dups)
	}
	if !keep.Since.Equal(before["keep"].Since) || keep.ID != before["keep"].ID || keep.Forwarded != n {
		t.Fatalf("unchanged route re-attached or lost count: before %+v after %+v", before["keep"], keep)
	}
	if after["change"].Spec.Credit != 300 {
		t.Fatalf("changed route runs with credit %d, want 300", after["change"].Spec.Credit)
	}

	// Added runs; removed stops (what comes to its queue stays there);
	// changed goes on from its queue.
	g.sendN("add", 0, 200)
	brokertest.CheckNoLoss(t, brokertest.Collect(t, brokertest.Dial(t, g.bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+g.dq["add"], 200, 60*time.Second), 200)
	g.sendN("change", 100, 200)
	changed := brokertest.Collect(t, brokertest.Dial(t, g.bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+g.dq["change"], 200, 60*time.Second)
	t.Logf("changed route: 200 sent (100 before the reload), %d received, %d duplicated", len(changed), brokertest.CheckNoLoss(t, changed, 200))
	brokertest.CheckNoLoss(t, brokertest.Collect(t, brokertest.Dial(t, g.bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+g.dq["remove"], 100, 60*time.Second), 100)
	g.sendN("remove", 100, 150)
	left := brokertest.Collect(t, brokertest.Dial(t, g.bs[0].Config(), amqp.ConnOptions{}), "/amq/queue/"+g.q["remove"], 50, 30*time.Second)
	brokertest.CheckNoLossFrom(t, left, 100, 150)
}

// logLine is the last log line holding msg.
func logLine(t *testing.T, out, msg string) string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"message":"`+msg+`"`) {
			return lines[i]
		}
	}
	t.Fatalf("no %q line in:\n%s", msg, out)
	return ""
}

// A bad file is refused whole with file:line (a syntax error, a route to
// an unknown broker, a setting that cannot change live) and the router
// goes on as it was; `fedrouter reload` and the endpoint answer alike; a
// token changed by a reload: the old one refused, the new one taken.
func TestReloadRefusesBadConfigAndTakesNewToken(t *testing.T) {
	parallelE2E(t)
	g := newReloadRig(t)
	tok1 := g.token("token1", "reload-test-token-one-0123456789")
	tok2 := g.token("token2", "reload-test-token-two-9876543210")
	g.write(map[string]int{"keep": 200}, tok1, "info", "")
	g.p = startRouter(t, g.config)
	before := g.waitRoutes("keep")

	good := g.refuseBadFiles(tok1, before["keep"])
	// SIGHUP with a bad file: logged, the router runs on.
	if err := g.p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(g.p.out.String(), `"message":"reload refused: the running configuration goes on unchanged"`) {
			return errors.New("no refusal line")
		}
		return nil
	})
	g.sendN("keep", 0, 100)
	brokertest.CheckNoLoss(t, brokertest.Collect(t, brokertest.Dial(t, g.bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+g.dq["keep"], 100, 60*time.Second), 100)

	// The good file again: the CLI and the endpoint give the same answer.
	if err := os.WriteFile(g.config, good, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := g.p.cli("reload", "--json")
	if code != 0 {
		t.Fatalf("reload --json: exit %d: %s", code, out)
	}
	var fromCLI api.Reload
	if err := json.Unmarshal([]byte(out), &fromCLI); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	fromAPI, err := g.p.apiWith(tok1).Reload(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromCLI)
	b, _ := json.Marshal(fromAPI)
	if string(a) != string(b) || fromAPI.Changed || fromAPI.RoutesUnchanged != 1 {
		t.Fatalf("CLI %s, endpoint %s", a, b)
	}

	// A new token and log level: the old token refused, the new one taken.
	// Through the Unix socket, as on the router's host: the file's new
	// token is not the router's yet.
	g.write(map[string]int{"keep": 200}, tok2, "debug", "")
	out, code = g.p.cliLocal("reload")
	if code != 0 || !strings.Contains(out, "settings: admin token, log level info -> debug") {
		t.Fatalf("reload: exit %d: %s", code, out)
	}
	t.Logf("fedrouter reload: %s", strings.TrimSpace(out))
	var ae *adminclient.Error
	if _, err := g.p.apiWith(tok1).Router(t.Context()); !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("old token after reload: %v", err)
	}
	if _, err := g.p.apiWith(tok2).Router(t.Context()); err != nil {
		t.Fatalf("new token after reload: %v", err)
	}
	if rs := g.waitRoutes("keep"); !rs["keep"].Since.Equal(before["keep"].Since) {
		t.Fatalf("the route moved after a reload that did not change it: %+v", rs["keep"])
	}

	g.redialOneBroker(tok2)
}

// refuseBadFiles writes bad files one after the other and checks each
// is refused with file:line by the CLI and the endpoint alike, the route
// (keep, as it was) untouched. It returns the good file, and leaves the
// last bad one in place.
func (g *reloadRig) refuseBadFiles(tok1 string, keep routes.Status) []byte {
	t := g.t
	t.Helper()
	good, err := os.ReadFile(g.config)
	if err != nil {
		t.Fatal(err)
	}
	// The CLI reads the file too (for the router's address and token):
	// a file it cannot load it refuses itself with the same file:line,
	// and the router is not asked; the endpoint refuses it all the same.
	bad := []struct{ name, yaml, want string }{
		{"syntax", string(good) + "  - {kind: queue, src: r1\n", g.config + ":9: did not find expected"},
		{"unknown broker", string(good) + "  - {kind: queue, src: nosuch, dest: r2, queue: q, exchange: x}\n", g.config + ":10: "},
		{"fixed setting", strings.Replace(string(good), "router_id: h-reload", "router_id: h-reload-2", 1), g.config + ":1: router_id cannot change"},
	}
	for _, b := range bad {
		if err := os.WriteFile(g.config, []byte(b.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := g.p.cli("reload")
		if code == 0 || !strings.Contains(out, b.want) {
			t.Fatalf("%s: reload: exit %d, want %q in:\n%s", b.name, code, b.want, out)
		}
		_, aerr := g.p.apiWith(tok1).Reload(t.Context())
		var ae *adminclient.Error
		if !errors.As(aerr, &ae) || ae.Status/100 != 4 || !strings.Contains(strings.Join(ae.Problems, "\n"), b.want) {
			t.Fatalf("%s: endpoint: %v (problems %q)", b.name, aerr, problemsOf(aerr))
		}
		for _, p := range ae.Problems {
			if !strings.Contains(out, p) {
				t.Fatalf("%s: the CLI does not say %q:\n%s", b.name, p, out)
			}
		}
		t.Logf("%s: refused: %s", b.name, strings.Join(ae.Problems, "; "))
		if rs := g.waitRoutes("keep"); !rs["keep"].Since.Equal(keep.Since) {
			t.Fatalf("%s: the route moved after a refused reload: %+v", b.name, rs["keep"])
		}
	}
	return good
}

// redialOneBroker changes r2's URL (another name of the same broker):
// r2 is re-dialled, r1 not; the route re-attaches to it and forwards on.
func (g *reloadRig) redialOneBroker(tok2 string) {
	t := g.t
	t.Helper()
	brokersBefore := g.brokers()
	if !strings.Contains(g.bs[1].URL, "127.0.0.1") {
		t.Skipf("r2's URL %s has no 127.0.0.1 to rename", g.bs[1].URL)
	}
	g.r2URL = strings.Replace(g.bs[1].URL, "127.0.0.1", "localhost", 1)
	g.write(map[string]int{"keep": 200}, tok2, "debug", "")
	res, err := g.client().Reload(t.Context())
	if err != nil || strings.Join(res.BrokersRedialed, ",") != "r2" || len(res.Settings) != 0 {
		t.Fatalf("reload after r2's URL changed: %+v, %v", res, err)
	}
	brokertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		now := g.brokers()
		if now["r2"].State != "Operational" || now["r2"].Generation <= brokersBefore["r2"].Generation || !strings.Contains(now["r2"].URL, "localhost") {
			return fmt.Errorf("r2 %+v (before %+v)", now["r2"], brokersBefore["r2"])
		}
		if now["r1"].Generation != brokersBefore["r1"].Generation || !now["r1"].Since.Equal(brokersBefore["r1"].Since) {
			return fmt.Errorf("r1 was re-dialled: %+v (before %+v)", now["r1"], brokersBefore["r1"])
		}
		return nil
	})
	g.waitRoutes("keep")
	g.sendN("keep", 100, 200)
	got := brokertest.Collect(t, brokertest.Dial(t, g.bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+g.dq["keep"], 100, 60*time.Second)
	brokertest.CheckNoLossFrom(t, got, 100, 200)
}

// client is an admin API client with the token in force: one a token,
// each holding its keep-alive connection (the API caps connections).
func (g *reloadRig) client() *adminclient.Client {
	if g.clients == nil {
		g.clients = map[string]*adminclient.Client{}
	}
	c := g.clients[g.tokenFile]
	if c == nil {
		c = g.p.apiWith(g.tokenFile)
		g.clients[g.tokenFile] = c
	}
	return c
}

// brokers is the router's broker connections by name.
func (g *reloadRig) brokers() map[string]api.BrokerStatus {
	g.t.Helper()
	bs, err := g.client().Brokers(g.t.Context())
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string]api.BrokerStatus{}
	for _, b := range bs {
		out[b.Broker] = b
	}
	return out
}

// cliLocal runs a fedrouter command as the operator on the router's host
// does: --config only, so the CLI talks over the router's Unix socket.
func (p *routerProc) cliLocal(args ...string) (string, int) {
	p.t.Helper()
	cmd := exec.Command(binary(p.t), args...)
	cmd.Env = append(os.Environ(), "FEDROUTER_CONFIG="+p.config)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		p.t.Fatalf("%v: %v", args, err)
	}
	return string(out), 0
}

// apiWith is a client of the router's admin API with the token in file.
func (p *routerProc) apiWith(tokenFile string) *adminclient.Client {
	p.t.Helper()
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		p.t.Fatal(err)
	}
	c, err := adminclient.New(p.admin, adminclient.Options{Token: strings.TrimSpace(string(tok)), Timeout: 30 * time.Second})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(c.Close)
	return c
}

func problemsOf(err error) []string {
	var ae *adminclient.Error
	if errors.As(err, &ae) {
		return ae.Problems
	}
	return nil
}
