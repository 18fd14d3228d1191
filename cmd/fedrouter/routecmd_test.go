package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/router/routertest"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// newFakeRouter is an in-memory router.Service with brokers a, b and c:
// routes added are Operational with some traffic counted.
func newFakeRouter() *routertest.Service {
	return routertest.New(routertest.Options{RouterID: "cli-test", Known: []string{"a", "b", "c"},
		Added:       routes.Status{State: routes.StateOperational, Counters: routes.Counters{Forwarded: 42, InFlight: 3}},
		TopologyOff: router.ErrTopologyOff,
		Brokers: []amqp.Status{
			{Broker: "a", State: amqp.Operational, URL: "amqp://h1:5672", Since: time.Now().Add(-time.Minute)},
			{Broker: "c", State: amqp.Waiting, URL: "amqp://h3:5672", Since: time.Now(), Attempt: 3, RetryIn: 4 * time.Second,
				LastError: errors.New("dial tcp h3:5672: connection refused")},
		},
		Links: []routes.LinkStatus{{Src: "a", Dest: "b", State: routes.StateOperational, Routes: 2},
			{Src: "c", Dest: "b", State: routes.StateWaiting, LastError: "c: connection refused"},
			{Src: "a", Dest: "d", Via: []string{"b", "c"}, State: routes.StateOperational, Routes: 1},
			{Src: "a", Ingress: true, State: routes.StateOperational, Transit: []routes.TransitStatus{{Broker: "a", Counters: routes.Counters{Forwarded: 7}}}},
			{Src: "b", Dest: "c", State: routes.StateOperational, Transit: []routes.TransitStatus{
				{Broker: "b", Dest: "c", Via: "c", Counters: routes.Counters{Forwarded: 10}},
				{Broker: "b", Dest: "d", Via: "c", Counters: routes.Counters{Forwarded: 5, DeadLettered: 1}}}}},
	})
}

// cliHarness runs the CLI in-process against an admin API on loopback.
type cliHarness struct {
	t   *testing.T
	svc *routertest.Service
	url string
}

// cliToken is the admin token of the harness's router.
const cliToken = "cli-test-token-0123456789"

// startRouterAPI serves the admin API with cliToken, which the CLI takes
// from FEDROUTER_TOKEN for the rest of the test.
func startRouterAPI(t *testing.T) *cliHarness {
	t.Helper()
	t.Setenv("FEDROUTER_TOKEN", cliToken)
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs after Close below
	h := &cliHarness{t: t, svc: newFakeRouter()}
	srv := router.NewAdminServer(h.svc, router.AdminOptions{Listen: "127.0.0.1:0", Token: cliToken, Log: zerolog.Nop()})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	h.url = "http://" + srv.Addr()
	return h
}

// runCLI runs fedrouter with args and returns stdout, stderr as main would
// print it, and the exit status main would give.
func runCLI(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = runMain(context.Background(), append([]string{"fedrouter"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

// run runs a command against the harness's router and checks the status.
func (h *cliHarness) run(wantCode int, args ...string) (string, string) {
	h.t.Helper()
	args = append(args[:2:2], append([]string{"--router", h.url}, args[2:]...)...)
	out, errOut, code := runCLI(args...)
	if code != wantCode {
		h.t.Fatalf("fedrouter %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, wantCode, out, errOut)
	}
	return out, errOut
}

func TestCLIAddDuplicateDelete(t *testing.T) {
	h := startRouterAPI(t)
	out, errOut := h.run(0, "queue", "add", "-d", "--credit", "50", "-s", "--on-reject", "dead-letter", "--dead-letter-queue", "dlq", "b", "a", "amq.direct", "orders")
	if out != "" || errOut != "" {
		t.Fatalf("add printed %q %q; qpid-route prints nothing", out, errOut)
	}
	want := routes.Spec{Kind: routes.KindQueue, Dest: "b", Src: "a", Exchange: "amq.direct", Queue: "orders", Durable: true,
		Credit: 50, Push: true, Cost: 1, OnReject: routes.DeadLetter, DeadLetterQueue: "dlq", OutcomeTimeout: routes.DefaultOutcomeTimeout}
	if !reflect.DeepEqual(h.svc.Last(), want) {
		t.Fatalf("router got %+v\nwant %+v", h.svc.Last(), want)
	}
	_, errOut = h.run(0, "queue", "add", "b", "a", "amq.direct", "orders")
	if errOut != "Duplicate route - ignoring: b(ex=amq.direct) <= a(queue=orders)\n" {
		t.Fatalf("duplicate: stderr %q", errOut)
	}
	if _, errOut = h.run(0, "queue", "add", "-q", "b", "a", "amq.direct", "orders"); errOut != "" {
		t.Fatalf("duplicate with -q: stderr %q", errOut)
	}
	out, _ = h.run(0, "route", "add", "-v", "--dest-exchange", "fed.in", "b", "a", "amq.topic", "stock.#")
	if !strings.Contains(out, "added route ") || !strings.Contains(out, "b(ex=fed.in) <= a(ex=amq.topic key=stock.#) (Operational)") {
		t.Fatalf("add -v printed %q", out)
	}
	h.run(0, "queue", "del", "b", "a", "amq.direct", "orders")
	_, errOut = h.run(1, "queue", "del", "b", "a", "amq.direct", "orders")
	if errOut != "fedrouter: no such route: b(ex=amq.direct) <= a(queue=orders) (route list shows the routes)\n" {
		t.Fatalf("deleting a missing route: stderr %q", errOut)
	}
}

func TestCLIServerErrorsAreOneLine(t *testing.T) {
	h := startRouterAPI(t)
	_, errOut := h.run(1, "route", "add", "b", "zz", "amq.topic", "#")
	if errOut != "fedrouter: unknown broker \"zz\" (configured: a, b, c)\n" {
		t.Fatalf("unknown broker: %q", errOut)
	}
	_, errOut = h.run(1, "queue", "add", "--on-reject", "drop", "b", "a", "ex", "q")
	if errOut != "fedrouter: invalid route: on_reject \"drop\": want reject or dead-letter\n" {
		t.Fatalf("invalid route: %q", errOut)
	}
}

func TestCLIListAndFlush(t *testing.T) {
	h := startRouterAPI(t)
	h.run(0, "queue", "add", "-d", "b", "a", "amq.direct", "orders")
	h.run(0, "route", "add", "c", "a", "amq.topic", "#")
	out, _ := h.run(0, "route", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := regexp.MustCompile(`^ID\s+Dest\s+Src\s+Exchange\s+Queue/Key\s+Durable\s+Origin\s+State\s+Forwarded\s+In flight\s+Detail\s+Last Error$`)
	row := regexp.MustCompile(`^[0-9a-f]{12}\s+b\s+a\s+amq\.direct\s+orders\s+yes\s+runtime\s+Operational\s+42\s+3\s+-\s+-$`)
	if len(lines) != 3 || !header.MatchString(lines[0]) || !row.MatchString(lines[1]) {
		t.Fatalf("route list:\n%s", out)
	}
	out, _ = h.run(0, "route", "list", "--json", "c")
	var sts []routes.Status
	if err := json.Unmarshal([]byte(out), &sts); err != nil || len(sts) != 1 || sts[0].Spec.Key != "#" || sts[0].Forwarded != 42 {
		t.Fatalf("route list --json c: %v\n%s", err, out)
	}
	if out, _ = h.run(0, "route", "flush", "c"); out != "1 route deleted\n" {
		t.Fatalf("flush c: %q", out)
	}
	if out, _ = h.run(0, "route", "flush"); out != "1 route deleted\n" {
		t.Fatalf("flush: %q", out)
	}
	if out, _ = h.run(0, "route", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty list --json: %q", out)
	}
	// The Origin column tells a route of the configuration file, which
	// del and flush leave alone, from one added at runtime.
	h.svc.AddConfig(routes.Spec{Kind: routes.KindQueue, Dest: "c", Src: "b", Exchange: "amq.direct", Queue: "fixed"}, routes.Counters{})
	out, _ = h.run(0, "route", "list", "c")
	if !regexp.MustCompile(`(?m)^[0-9a-f]{12}\s+c\s+b\s+amq\.direct\s+fixed\s+no\s+config\s+Operational\s`).MatchString(out) {
		t.Fatalf("route list c:\n%s", out)
	}
}

func TestCLIRouteMapMergesMirroredRoutes(t *testing.T) {
	h := startRouterAPI(t)
	out, _ := h.run(0, "route", "map")
	if out != "Static Routes:\n  none found\n" {
		t.Fatalf("empty map: %q", out)
	}
	h.run(0, "route", "add", "b", "a", "amq.topic", "news.#")
	h.run(0, "route", "add", "a", "b", "amq.topic", "news.#")
	h.run(0, "route", "add", "a", "b", "amq.topic", "other") // same brokers, other key: not merged
	h.run(0, "queue", "add", "c", "a", "amq.direct", "orders")
	out, _ = h.run(0, "route", "map")
	want := "Static Routes:\n" +
		"  a(ex=amq.topic) <=> b(ex=amq.topic key=news.#)\n" +
		"  a(ex=amq.topic) <= b(ex=amq.topic key=other)\n" +
		"  c(ex=amq.direct) <= a(queue=orders)\n"
	if out != want {
		t.Fatalf("route map:\n%s\nwant:\n%s", out, want)
	}
	out, _ = h.run(0, "route", "map", "--json")
	var lines []mapLine
	if err := json.Unmarshal([]byte(out), &lines); err != nil || len(lines) != 3 || !lines[0].Bidirectional || len(lines[0].Routes) != 2 || lines[1].Bidirectional {
		t.Fatalf("route map --json: %v\n%s", err, out)
	}
}

func TestCLILinkAndBrokerList(t *testing.T) {
	h := startRouterAPI(t)
	out, _ := h.run(0, "link", "list")
	for _, re := range []string{`(?m)^Src\s+Dest\s+State\s+Routes\s+Transit\s+Last Error$`, `(?m)^a\s+b\s+Operational\s+2\s+-\s+-$`,
		`(?m)^c\s+b\s+Waiting\s+0\s+-\s+c: connection refused$`, `(?m)^a\s+d via b,c\s+Operational\s+1\s+-\s+-$`,
		`(?m)^a\s+\(ingress\)\s+Operational\s+0\s+7 fwd\s+-$`, `(?m)^b\s+c\s+Operational\s+0\s+for c,d: 15 fwd, 1 dead-lettered\s+-$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("link list does not match %s:\n%s", re, out)
		}
	}
	out, _ = h.run(0, "link", "list", "--json")
	if !strings.Contains(out, `"last_error": "c: connection refused"`) {
		t.Errorf("link list --json:\n%s", out)
	}
	out, _ = h.run(0, "broker", "list")
	for _, re := range []string{`(?m)^Broker\s+URL\s+State\s+Since\s+Last Error$`, `(?m)^a\s+amqp://h1:5672\s+Operational\s+1m0s ago\s+-$`,
		`(?m)^c\s+amqp://h3:5672\s+Waiting \(attempt 3, retry in [1-4]s\)\s+[0-9]s ago\s+dial tcp h3:5672: connection refused$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("broker list does not match %s:\n%s", re, out)
		}
	}
	out, _ = h.run(0, "broker", "list", "--json")
	var bs []api.BrokerStatus
	if err := json.Unmarshal([]byte(out), &bs); err != nil || len(bs) != 2 || bs[1].LastError != "dial tcp h3:5672: connection refused" || bs[1].RetryIn != "4s" {
		t.Errorf("broker list --json: %v\n%s", err, out)
	}
}

func TestCLIUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queue", "add", "b", "a"}, "usage: fedrouter queue add [options] <dest> <src> <exchange> <queue> (got 2 arguments)\n"},
		{[]string{"route", "del", "b", "a", "x"}, "usage: fedrouter route del [options] <dest> <src> <exchange> <key> | <id> (got 3 arguments)\n"},
		{[]string{"route", "del", "orders"}, "usage: fedrouter route del [options] <dest> <src> <exchange> <key> | <id> (\"orders\" is not a route id: 12 hexadecimal digits, as route list shows)\n"},
		{[]string{"route", "add", "b", "a", "x", "k", "-d"}, "usage: fedrouter route add [options] <dest> <src> <exchange> <key> (got 5 arguments); options go before the arguments, found \"-d\" after them\n"},
		{[]string{"route", "list", "b", "c"}, "usage: fedrouter route list [options] [<dest>] (got 2 arguments)\n"},
		{[]string{"route", "map", "x", "y"}, "usage: fedrouter route map [options] [<broker>] (got 2 arguments)\n"},
		{[]string{"link", "list", "x"}, "usage: fedrouter link list [options] (got 1 argument)\n"},
		{[]string{"link", "add", "b"}, "usage: fedrouter link add [options] <dest> <src> (got 1 argument)\n"},
		{[]string{"link", "add", "--cost", "0", "b", "a"}, "fedrouter link add: --cost 0: want 1 or more\n"},
		{[]string{"link", "del", "b", "a", "c"}, "usage: fedrouter link del [options] <dest> <src> (got 3 arguments)\n"},
		{[]string{"route", "add", "--credit", "many", "b", "a", "x", "k"}, "fedrouter route add: invalid value \"many\" for --credit (see fedrouter route add --help)\n"},
		{[]string{"queue", "add", "--dest-exchange", "x", "b", "a", "x", "q"}, "fedrouter queue add: unknown option --dest-exchange (see fedrouter queue add --help)\n"},
		{[]string{"broker", "list", "--router", "ftp://h"}, "fedrouter: --router \"ftp://h\": want the admin API's URL, like http://127.0.0.1:9595\n"},
	} {
		out, errOut, code := runCLI(c.args...)
		if code != 2 || errOut != c.want || out != "" {
			t.Errorf("fedrouter %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}

func TestCLIToken(t *testing.T) {
	h := startRouterAPI(t)
	t.Setenv("FEDROUTER_TOKEN", "")
	_, errOut := h.run(1, "route", "list")
	if !strings.Contains(errOut, "fedrouter: missing admin token") || !strings.Contains(errOut, "(give --config with the router's configuration file, or --token-file, --token; docs/cli.md)") {
		t.Fatalf("no token: %q", errOut)
	}
	h.run(0, "route", "list", "--token", cliToken)
	t.Setenv("FEDROUTER_TOKEN", cliToken)
	t.Setenv("FEDROUTER_ROUTER", strings.TrimPrefix(h.url, "http://")) // a bare host:port is taken as http
	if _, errOut, code := runCLI("queue", "add", "b", "a", "amq.direct", "orders"); code != 0 {
		t.Fatalf("token and router from the environment: exit %d: %s", code, errOut)
	}
}

func TestCLIUnreachableRouter(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil { // nothing listens there now: connection refused
		t.Fatal(err)
	}
	_, errOut, code := runCLI("route", "list", "--router", "http://"+addr)
	want := "fedrouter: cannot reach router at http://" + addr + ": dial tcp " + addr + ": connect: connection refused (is `fedrouter run` running? --router)\n"
	if code != 1 || errOut != want {
		t.Fatalf("exit %d, stderr %q\nwant exit 1, %q", code, errOut, want)
	}
}

func TestCLITimeout(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// A listener that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // the test is over: nothing to report
	_, errOut, code := runCLI("broker", "list", "--timeout", "100ms", "--router", "http://"+ln.Addr().String())
	if code != 1 || !strings.Contains(errOut, "did not answer within 100ms (--timeout)") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestCLITopology(t *testing.T) {
	h := startRouterAPI(t)
	_, errOut, code := runCLI("topology", "--router", h.url)
	if code != 1 || !strings.Contains(errOut, "flooding is off") {
		t.Fatalf("topology with flooding off: exit %d: %s", code, errOut)
	}
	cfg := topology.DefaultConfig()
	cfg.RouterID, cfg.Instance, cfg.Secret = "r1", 1, []byte("0123456789abcdef")
	n, err := topology.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := n.SetLocal([]topology.BrokerState{{Name: "a", State: "Operational"}, {Name: "b", State: "Operational"}},
		[]topology.Link{{From: "a", To: "b", Cost: 3, Up: true}}, now); err != nil {
		t.Fatal(err)
	}
	snap := n.Snapshot(now)
	h.svc.SetTopology(&snap)
	out, _, code := runCLI("topology", "--router", h.url)
	for _, want := range []string{"Router r1: 1 routers, 2 brokers, 1 links", "(self)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("topology: exit %d, want %q in:\n%s", code, want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^a\s+b\s+3\s+up\s+r1`).MatchString(out) || !regexp.MustCompile(`(?m)^a\s+b\s+b\s+3\s+1\s+\[b\]`).MatchString(out) {
		t.Fatalf("topology tables:\n%s", out)
	}
	if out, _, _ := runCLI("topology", "--router", h.url, "--dot"); !strings.Contains(out, `"a" -> "b"`) {
		t.Fatalf("--dot:\n%s", out)
	}
	if out, _, _ := runCLI("route", "map", "--router", h.url); !strings.Contains(out, "Next hops (link state):") {
		t.Fatalf("route map without next hops:\n%s", out)
	}
}

func TestCLIDynamicRoutes(t *testing.T) {
	h := startRouterAPI(t)
	h.run(0, "dynamic", "add", "--divert-bindings", "b", "a", "amq.topic")
	h.run(0, "dynamic", "add", "a", "b", "amq.topic")
	h.run(0, "dynamic", "add", "c", "a", "events")
	h.run(2, "dynamic", "add", "b", "a", "amq.topic", "extra")
	out, _ := h.run(0, "route", "map")
	for _, want := range []string{"Dynamic Routes:", "Exchange amq.topic:\n    a <=> b", "Exchange events:\n    c <= a", "Static Routes:\n  none found"} {
		if !strings.Contains(out, want) {
			t.Fatalf("route map lacks %q:\n%s", want, out)
		}
	}
	h.run(0, "dynamic", "del", "b", "a", "amq.topic")
	out, _ = h.run(0, "route", "list")
	if strings.Count(out, "(dynamic)") != 2 {
		t.Fatalf("route list after del:\n%s", out)
	}
}

// errFull is what a full disk or a closed pipe would answer.
var errFull = errors.New("no space left on device")

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errFull }

// A command whose output cannot be written fails, saying so.
func TestCLIOutputWriteFails(t *testing.T) {
	h := startRouterAPI(t)
	h.run(0, "queue", "add", "b", "a", "amq.direct", "orders")
	for _, args := range [][]string{{"profiles"}, {"route", "list", "--router", h.url}, {"route", "map", "--router", h.url},
		{"broker", "list", "--router", h.url}, {"route", "flush", "--router", h.url}} {
		app := newApp()
		app.Writer, app.ErrWriter = fullWriter{}, io.Discard
		err := app.Run(append([]string{"fedrouter"}, args...))
		if !errors.Is(err, errFull) || !strings.HasPrefix(err.Error(), "writing the output: ") {
			t.Errorf("fedrouter %s: %v, want the write's error", strings.Join(args, " "), err)
		}
	}
}
