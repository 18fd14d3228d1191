package main

import (
	"bytes"
	"net"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/internal/ownfile"
	"github.com/fedrouter/fedrouter/routes"
)

// TestCLIExitStatusAndOneLineErrors: every kind of usage error — an
// unknown command, an unknown option, arguments a command does not take,
// a command group without its command, a missing configuration — is one
// line on stderr naming it, nothing on stdout, exit status 2; a
// configuration file that cannot be read is status 2 as well.
func TestCLIExitStatusAndOneLineErrors(t *testing.T) {
	t.Setenv("FEDROUTER_CONFIG", "")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `fedrouter: unknown command "bogus" (fedrouter --help lists them)`},
		{[]string{"route", "bogus"}, `fedrouter route: unknown command "bogus" (commands: add, del, list, flush, map)`},
		{[]string{"route"}, `usage: fedrouter route <add|del|list|flush|map> [options] ... (see fedrouter route --help)`},
		{[]string{"--bogus"}, `fedrouter: unknown option --bogus (see fedrouter --help)`},
		{[]string{"-v"}, `fedrouter: unknown option -v (see fedrouter --help)`},
		{[]string{"run", "--bogus"}, `fedrouter run: unknown option --bogus (see fedrouter run --help)`},
		{[]string{"check-config", "-x", "f"}, `fedrouter check-config: unknown option -x (see fedrouter check-config --help)`},
		{[]string{"topology", "--bogus"}, `fedrouter topology: unknown option --bogus (see fedrouter topology --help)`},
		{[]string{"route", "list", "--timeout", "soon"}, `fedrouter route list: invalid value "soon" for --timeout (see fedrouter route list --help)`},
		{[]string{"profiles", "extra"}, `usage: fedrouter profiles [options] (got 1 argument: "extra")`},
		{[]string{"version", "extra"}, `usage: fedrouter version [options] (got 1 argument: "extra")`},
		{[]string{"run", "extra"}, `usage: fedrouter run [options] (got 1 argument: "extra")`},
		{[]string{"run"}, `usage: fedrouter run --config FILE (or $FEDROUTER_CONFIG): no configuration given`},
		{[]string{"check-config"}, `usage: fedrouter check-config [--config] FILE (or $FEDROUTER_CONFIG): no configuration given`},
		{[]string{"check-config", "a", "b"}, `usage: fedrouter check-config [--config] FILE (got 2 arguments)`},
		{[]string{"run", "-c", missing}, `fedrouter: config ` + missing + `: open ` + missing + `: no such file or directory`},
		{[]string{"check-config", missing}, `fedrouter: config ` + missing + `: open ` + missing + `: no such file or directory`},
		{[]string{"check-config", "--config", missing}, `fedrouter: config ` + missing + `: open ` + missing + `: no such file or directory`},
		{[]string{"route", "list", "-c", missing}, `fedrouter: --config: config ` + missing + `: open ` + missing + `: no such file or directory`},
	} {
		out, errOut, code := runCLI(c.args...)
		if code != 2 || out != "" || errOut != c.want+"\n" {
			t.Errorf("fedrouter %s: exit %d, stdout %q, stderr %q\nwant exit 2, stderr %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}

// TestCLIConfigOneWay: run, check-config, state drop and the API commands
// all take the configuration as --config, -c or $FEDROUTER_CONFIG.
func TestCLIConfigOneWay(t *testing.T) {
	_, cfg := writeCheckCase(t, checkCase{})
	for _, args := range [][]string{{"check-config", cfg}, {"check-config", "--config", cfg}, {"check-config", "-c", cfg}} {
		if out, errOut, code := runCLI(args...); code != 0 || out != cfg+": ok (router chk, 2 brokers)\n" {
			t.Errorf("fedrouter %s: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	t.Setenv("FEDROUTER_CONFIG", cfg)
	if out, errOut, code := runCLI("check-config"); code != 0 || out != cfg+": ok (router chk, 2 brokers)\n" {
		t.Errorf("check-config with $FEDROUTER_CONFIG: exit %d: %s%s", code, out, errOut)
	}
	// state drop reads it too (nothing saved: the id is not there).
	if _, errOut, code := runCLI("state", "drop", "0123456789ab"); code != 1 || !strings.Contains(errOut, `no saved route has id "0123456789ab"`) {
		t.Errorf("state drop with $FEDROUTER_CONFIG: exit %d: %s", code, errOut)
	}
	for _, c := range []struct{ name, flag string }{{"long", "--config"}, {"short", "-c"}} {
		// The API commands take the file's admin URL: admin is off here.
		if _, errOut, code := runCLI("broker", "list", c.flag, cfg); code != 2 || !strings.Contains(errOut, "admin") {
			t.Errorf("broker list %s: exit %d: %s", c.flag, code, errOut)
		}
	}
}

// TestCLIVersion: `fedrouter version` and --version print the version and
// the Go that built it; -v is not --version.
func TestCLIVersion(t *testing.T) {
	want := regexp.MustCompile(`^fedrouter dev \(` + regexp.QuoteMeta(runtime.Version()) + ` [a-z0-9]+/[a-z0-9]+\)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if out, errOut, code := runCLI(args...); code != 0 || !want.MatchString(out) || errOut != "" {
			t.Errorf("fedrouter %s: exit %d, stdout %q, stderr %q", args[0], code, out, errOut)
		}
	}
}

// TestCLIRefusesValuesTheRouteWouldReplace: --credit 0, --cost 0 and
// --outcome-timeout 0s would be taken as "the default" by the route: the
// CLI refuses them (usage, status 2) and sends nothing.
func TestCLIRefusesValuesTheRouteWouldReplace(t *testing.T) {
	h := startRouterAPI(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"route", "add", "--credit", "0", "b", "a", "x", "k"}, "fedrouter route add: --credit 0: want 1..10000 (messages in flight)\n"},
		{[]string{"queue", "add", "--cost", "0", "b", "a", "x", "q"}, "fedrouter queue add: --cost 0: want 1 or more\n"},
		{[]string{"dynamic", "add", "--outcome-timeout", "0s", "b", "a", "x"}, "fedrouter dynamic add: --outcome-timeout 0s: want a positive duration (e.g. 30s)\n"},
		{[]string{"route", "add", "--outcome-timeout", "-5s", "b", "a", "x", "k"}, "fedrouter route add: --outcome-timeout -5s: want a positive duration (e.g. 30s)\n"},
	} {
		_, errOut := h.run(2, c.args...)
		if errOut != c.want {
			t.Errorf("fedrouter %s: stderr %q, want %q", strings.Join(c.args, " "), errOut, c.want)
		}
	}
	if out, _ := h.run(0, "route", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("a refused add reached the router:\n%s", out)
	}
	h.run(0, "route", "add", "--credit", "1", "--cost", "3", "--outcome-timeout", "45s", "b", "a", "x", "k")
	if got := h.svc.Last(); got.Credit != 1 || got.Cost != 3 || got.OutcomeTimeout.String() != "45s" {
		t.Fatalf("router got %+v", got)
	}
}

// TestCLIRouteDelByID: `route del ID` deletes the route route list shows
// with that id; a route that is not there is named as the user typed it.
func TestCLIRouteDelByID(t *testing.T) {
	h := startRouterAPI(t)
	h.run(0, "queue", "add", "b", "a", "amq.direct", "orders")
	id := routes.Spec{Kind: routes.KindQueue, Dest: "b", Src: "a", Exchange: "amq.direct", Queue: "orders"}.ID()
	if out, _ := h.run(0, "route", "list"); !strings.Contains(out, id) {
		t.Fatalf("route list does not show %s:\n%s", id, out)
	}
	if out, _ := h.run(0, "route", "del", "-v", id); out != "deleted route "+id+"\n" {
		t.Fatalf("route del -v %s: %q", id, out)
	}
	if out, _ := h.run(0, "route", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("still listed after route del %s:\n%s", id, out)
	}
	if _, errOut := h.run(1, "route", "del", id); errOut != "fedrouter: no such route: id "+id+" (route list shows the routes and their ids)\n" {
		t.Fatalf("route del of a deleted id: %q", errOut)
	}
	if _, errOut := h.run(1, "route", "del", "b", "a", "amq.topic", "stock.#"); errOut != "fedrouter: no such route: b(ex=amq.topic) <= a(ex=amq.topic key=stock.#) (route list shows the routes)\n" {
		t.Fatalf("route del of a route never added: %q", errOut)
	}
}

// TestCLIListAndMapByBroker: route list BROKER and route map BROKER take
// a broker by name or host:port and refuse one the router does not have,
// rather than print an empty table.
func TestCLIListAndMapByBroker(t *testing.T) {
	h := startRouterAPI(t)
	h.run(0, "queue", "add", "a", "c", "amq.direct", "orders") // to a (amqp://h1:5672)
	h.run(0, "route", "add", "c", "a", "amq.topic", "#")       // from a, to c
	for _, arg := range []string{"a", "h1:5672", "h1", "guest/guest@h1:5672"} {
		out, _ := h.run(0, "route", "list", arg)
		if strings.Count(out, "\n") != 2 || !strings.Contains(out, "orders") || strings.Contains(out, "amq.topic") {
			t.Errorf("route list %s:\n%s", arg, out)
		}
		out, _ = h.run(0, "route", "map", arg)
		if !strings.Contains(out, "a(ex=amq.direct) <= c(queue=orders)") || !strings.Contains(out, "c(ex=amq.topic) <= a(ex=amq.topic key=#)") {
			t.Errorf("route map %s:\n%s", arg, out)
		}
	}
	out, _ := h.run(0, "route", "map", "c")
	if !strings.Contains(out, "c(ex=amq.topic)") || !strings.Contains(out, "a(ex=amq.direct)") {
		t.Errorf("route map c:\n%s", out)
	}
	for _, args := range [][]string{{"route", "list", "zz"}, {"route", "map", "h9:5672"}, {"route", "list", "--json", "u/secret@h9"}} {
		out, errOut := h.run(1, args...)
		typed := args[len(args)-1]
		if typed == "u/secret@h9" {
			typed = "u/xxxxx@h9"
		}
		want := `fedrouter: unknown broker "` + typed + `": not a broker name or host:port of this router, nor a destination of its routes (brokers: a, c)` + "\n"
		if out != "" || errOut != want {
			t.Errorf("fedrouter %s: stdout %q, stderr %q\nwant %q", strings.Join(args, " "), out, errOut, want)
		}
	}
}

// TestCLIQuiet: -q prints nothing but errors on every command — no
// listing, no count, no duplicate warning — and the status says whether
// it worked; with -v it is a usage error.
func TestCLIQuiet(t *testing.T) {
	h := startRouterAPI(t)
	for _, args := range [][]string{
		{"queue", "add", "-q", "b", "a", "amq.direct", "orders"},
		{"queue", "add", "-q", "b", "a", "amq.direct", "orders"}, // the duplicate
		{"route", "list", "-q"}, {"route", "list", "-q", "--json"}, {"route", "map", "-q"},
		{"link", "list", "-q"}, {"broker", "list", "-q"}, {"topology", "-q"},
		{"route", "flush", "-q"},
	} {
		wantCode := 0
		if args[0] == "topology" {
			wantCode = 1 // the fake floods nothing: the error is still said
		}
		out, errOut := h.run(wantCode, args...)
		if out != "" || (wantCode == 0 && errOut != "") || (wantCode == 1 && !strings.Contains(errOut, "flooding is off")) {
			t.Errorf("fedrouter %s: stdout %q, stderr %q", strings.Join(args, " "), out, errOut)
		}
	}
	if _, errOut := h.run(1, "route", "list", "-q", "zz"); !strings.HasPrefix(errOut, `fedrouter: unknown broker "zz"`) {
		t.Errorf("an error with -q: %q", errOut)
	}
	if _, errOut := h.run(2, "route", "list", "-q", "-v"); errOut != "fedrouter route list: -q and -v together: give one\n" {
		t.Errorf("-q -v: %q", errOut)
	}
}

// TestCLIErrorsWithoutPackageNames: the router's refusals and the CLI's
// own failures reach the operator without the package names that head
// them in the code.
func TestCLIErrorsWithoutPackageNames(t *testing.T) {
	h := startRouterAPI(t)
	_, errOut := h.run(1, "queue", "add", "b", "zz", "ex", "q")
	if errOut != "fedrouter: unknown broker \"zz\" (configured: a, b, c)\n" {
		t.Errorf("router's refusal: %q", errOut)
	}
	// A local failure: the state lock of a stopped router's state file,
	// held by this test, refuses state drop.
	_, cfg := writeCheckCase(t, checkCase{})
	release, err := ownfile.Lock(filepath.Join(filepath.Dir(cfg), "fedrouter-chk.routes.json.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = release() }()
	_, errOut, code := runCLI("state", "drop", "-c", cfg, "0123456789ab")
	if code != 1 || !strings.HasPrefix(errOut, "fedrouter: state file ") || !strings.Contains(errOut, "is locked by another process") {
		t.Errorf("state drop under a held lock: exit %d, %q", code, errOut)
	}
}

// TestCLIHelpAtAnyDepth: `help route list` shows route list's help (as
// `route list --help` does), not route's; help alone shows the app's.
func TestCLIHelpAtAnyDepth(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "route", "list"}, "fedrouter route list [command options] [<dest>]"},
		{[]string{"help", "queue", "add"}, "fedrouter queue add [command options] <dest> <src> <exchange> <queue>"},
		{[]string{"help", "route"}, "fedrouter route - add, delete, list and map exchange routes"},
		{[]string{"help"}, "fedrouter - AMQP 1.0 federation router"},
		{[]string{"--help"}, "fedrouter - AMQP 1.0 federation router"},
	} {
		out, errOut, code := runCLI(c.args...)
		if code != 0 || !strings.Contains(out, c.want) || errOut != "" {
			t.Errorf("fedrouter %s: exit %d, stderr %q, stdout:\n%s\nwant %q", strings.Join(c.args, " "), code, errOut, out, c.want)
		}
	}
	if _, errOut, code := runCLI("help", "bogus"); code != 2 || errOut != "fedrouter: unknown command \"bogus\" (fedrouter --help lists them)\n" {
		t.Errorf("help bogus: exit %d, %q", code, errOut)
	}
}

// TestCLIShortTimeout: -t is --timeout, as in qpid-route.
func TestCLIShortTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // the test is over: nothing to report
	_, errOut, code := runCLI("broker", "list", "-t", "100ms", "--router", "http://"+ln.Addr().String())
	if code != 1 || !strings.Contains(errOut, "did not answer within 100ms (--timeout)") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestCLINoPath: every add command takes --no-path, the route gets the
// steps, and route list shows them.
func TestCLINoPath(t *testing.T) {
	h := startRouterAPI(t)
	h.run(0, "queue", "add", "--no-path", "hold 10m, reject", "b", "a", "amq.direct", "orders")
	if got := h.svc.Last().NoPath; len(got) != 2 || got[0] != "hold 10m" || got[1] != "reject" {
		t.Fatalf("queue add --no-path: the router got %q", got)
	}
	h.run(0, "route", "add", "--no-path", "hold 1m", "--no-path", "reject", "c", "a", "amq.topic", "#")
	if got := h.svc.Last().NoPath; len(got) != 2 || got[1] != "reject" {
		t.Fatalf("route add --no-path twice: the router got %q", got)
	}
	h.run(0, "dynamic", "add", "--no-path", "hold", "b", "a", "amq.topic")
	if got := h.svc.Last().NoPath; len(got) != 1 || got[0] != "hold" {
		t.Fatalf("dynamic add --no-path: the router got %q", got)
	}
	out, _ := h.run(0, "route", "list")
	if !strings.Contains(out, "no path: hold 10m, reject") || !strings.Contains(out, "no path: hold 1m, reject") {
		t.Fatalf("route list does not show the policies:\n%s", out)
	}
}

// TestCLIPastLastError: a route Operational again shows its last error as
// past, with its time; a failing one shows it as it is.
func TestCLIPastLastError(t *testing.T) {
	at := time.Date(2026, 12, 4, 14, 2, 11, 0, time.Local)
	sts := []routes.Status{
		{ID: "0123456789ab", Spec: routes.Spec{Kind: routes.KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "q"}, Origin: routes.OriginRuntime,
			State: routes.StateOperational, LastError: "b: connection refused", LastErrorAt: at},
		{ID: "0123456789ac", Spec: routes.Spec{Kind: routes.KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "r"}, Origin: routes.OriginRuntime,
			State: routes.StateWaiting, LastError: "b: connection refused", LastErrorAt: at},
		{ID: "0123456789ad", Spec: routes.Spec{Kind: routes.KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "s"}, Origin: routes.OriginRuntime,
			State: routes.StateOperational},
	}
	var out bytes.Buffer
	if err := printRoutes(&out, sts); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`(?m)^0123456789ab .*Operational .* past \(Dec  4 14:02:11\): b: connection refused$`,
		`(?m)^0123456789ac .*Waiting .* - +b: connection refused$`, `(?m)^0123456789ad .*Operational .* -$`} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("route list does not match %s:\n%s", re, out.String())
		}
	}
}

// TestCLIPartialRouteList: a router whose list is partial (a cluster
// member whose store cannot be read lists its own routes only) says so;
// route list and route map print what they got and fail, saying why.
func TestCLIPartialRouteList(t *testing.T) {
	h := startRouterAPI(t)
	h.run(0, "queue", "add", "b", "a", "amq.direct", "orders")
	const why = "the cluster store cannot be read: this member's routes only are listed"
	h.svc.SetPartial(why)
	for _, args := range [][]string{{"route", "list"}, {"route", "list", "--json"}, {"route", "map"}, {"route", "list", "b"}} {
		out, errOut := h.run(1, args...)
		if !strings.Contains(out, "orders") || errOut != "fedrouter: route list: "+why+"\n" {
			t.Errorf("fedrouter %s: stdout %q, stderr %q", strings.Join(args, " "), out, errOut)
		}
	}
	h.svc.SetPartial("")
	if _, errOut := h.run(0, "route", "list"); errOut != "" {
		t.Errorf("whole list: stderr %q", errOut)
	}
}
