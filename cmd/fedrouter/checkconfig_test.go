package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/routes"
)

// checkCase is one configuration the router's start refuses: files is
// what to lay out in its directory first (given the directory and the
// configuration's path), want what both commands must say.
type checkCase struct {
	name  string
	yaml  string // after the brokers; "admin: {listen: off}" added unless it has an admin section
	files func(t *testing.T, dir, cfg string)
	want  []string
}

// checkBase is the start of every case's configuration: two brokers on
// closed ports (never dialled: every case is refused first).
const checkBase = `router_id: chk
brokers:
  - {name: a, url: 'amqp://127.0.0.1:1', profile: generic}
  - {name: b, url: 'amqp://127.0.0.1:2', profile: generic}
reconnect: {min: 1s, max: 2s}
log: {level: info, format: json}
`

// writeCheckCase writes c's configuration and files into a new directory.
func writeCheckCase(t *testing.T, c checkCase) (dir, cfg string) {
	t.Helper()
	dir = t.TempDir()
	cfg = filepath.Join(dir, "router.yaml")
	yaml := checkBase + c.yaml + "\n"
	if !strings.Contains(c.yaml, "admin:") {
		yaml += "admin: {listen: off}\n"
	}
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(yaml, "DIR", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	if c.files != nil {
		c.files(t, dir, cfg)
	}
	return dir, cfg
}

// writeFile writes data to path, mode 0600, or fails the test.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// saveState writes a state file holding specs at the case's default path.
func saveState(t *testing.T, dir string, specs ...routes.Spec) string {
	t.Helper()
	path := filepath.Join(dir, "fedrouter-chk.routes.json")
	for i := range specs {
		specs[i] = specs[i].WithDefaults()
	}
	if err := routes.SaveState(path, specs); err != nil {
		t.Fatal(err)
	}
	return path
}

// orphan is a saved route whose destination is no longer configured.
var orphan = routes.Spec{Kind: routes.KindQueue, Src: "a", Dest: "gone", Exchange: "amq.direct", Queue: "q", Durable: true}

const longSecret = "0123456789abcdef0123456789abcdef"

// startRefusals is the list of what `fedrouter run` refuses at start,
// each row one error path of the start (cmd/fedrouter/main.go runDaemon,
// router.Start, AdminServer.Start), found by reading them:
// docs/cli.md (check-config) lists them.
func startRefusals() []checkCase {
	return []checkCase{
		// config.Load: the file's rules (one row: a bad value and the
		// problems after it, all reported).
		{name: "a bad duration does not hide the rest", yaml: "topology: {refresh: 1x}\nmetrics: {route_series: -1}",
			want: []string{`:7: "1x" is not a duration (e.g. 2s, 1m)`, `:8: metrics.route_series -1`}},
		// AdminServer.Start: net.Listen.
		{name: "admin port 0", yaml: "admin: {listen: '127.0.0.1:0'}",
			want: []string{`admin.listen "127.0.0.1:0": port "0": want a port number 1..65535 (port 0 picks one at random, which the CLI cannot find)`}},
		{name: "admin port out of range", yaml: "admin: {listen: '127.0.0.1:70000'}",
			want: []string{`admin.listen "127.0.0.1:70000": port "70000": want a port number 1..65535`}},
		// newAdmin: AdminToken reads token_file.
		{name: "admin token file missing", yaml: "admin: {listen: '127.0.0.1:9595', token_file: DIR/no-token}",
			want: []string{"admin.token_file: open ", "/no-token: no such file or directory"}},
		// AdminServer.Start: checkOptions loads the certificate.
		{name: "admin TLS files missing", yaml: "admin: {listen: '127.0.0.1:9595', tls: {cert_file: DIR/c.pem, key_file: DIR/k.pem}}",
			want: []string{"admin.tls: open ", "/c.pem: no such file or directory"}},
		// newAdmin: AdminToken reads the token generated at an earlier start.
		{name: "generated token readable by others", yaml: "admin: {listen: '127.0.0.1:9595'}",
			files: func(t *testing.T, dir, _ string) {
				p := filepath.Join(dir, "fedrouter-chk.admin-token")
				writeFile(t, p, "0123456789abcdef0123456789abcdef\n")
				if err := os.Chmod(p, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"admin API: generated token ", "has mode 0644: other users may read or write it"}},
		// AdminServer.Start: listenSocket.
		{name: "a file in the admin socket's place", yaml: "admin: {listen: '127.0.0.1:9595'}",
			files: func(t *testing.T, dir, _ string) { writeFile(t, filepath.Join(dir, "fedrouter-chk.admin.sock"), "x") },
			want:  []string{"admin API: socket ", "a file that is not a socket is there: remove it"}},
		// dialAll: BrokerConfigs reads password_file.
		{name: "broker password file missing", yaml: "routes: []\n", files: func(t *testing.T, _, cfg string) {
			addToBroker(t, cfg, "a", "password_file: /nonexistent/pw, username: u")
		}, want: []string{`:3: broker "a": password_file: open /nonexistent/pw: no such file or directory`}},
		// dialAll: amqp.Dial loads the TLS files before it dials.
		{name: "broker CA file missing", files: func(t *testing.T, _, cfg string) {
			addToBroker(t, cfg, "b", "tls: {ca_file: /nonexistent/ca.pem}")
		}, want: []string{`:4: broker "b": tls: CA file: open /nonexistent/ca.pem: no such file or directory`}},
		{name: "broker CA file not PEM", files: func(t *testing.T, dir, cfg string) {
			writeFile(t, filepath.Join(dir, "ca.pem"), "not a certificate")
			addToBroker(t, cfg, "a", "tls: {ca_file: "+filepath.Join(dir, "ca.pem")+"}")
		}, want: []string{`:3: broker "a": tls: CA file `, `ca.pem holds no PEM certificate`}},
		{name: "broker client certificate missing", files: func(t *testing.T, _, cfg string) {
			addToBroker(t, cfg, "a", "tls: {cert_file: /nonexistent/c.pem, key_file: /nonexistent/k.pem}")
		}, want: []string{`:3: broker "a": tls: client certificate: open /nonexistent/c.pem: no such file or directory`}},
		// startCluster: StoreURL, then pgstore.Open's parse.
		{name: "cluster without a store", yaml: "cluster: {name: c}",
			want: []string{"cluster: no store URL: set cluster.store, cluster.store_file or $FEDROUTER_STORE_URL"}},
		{name: "cluster store file missing", yaml: "cluster: {name: c, store_file: DIR/store.url}",
			want: []string{"cluster.store_file: open ", "store.url: no such file or directory"}},
		{name: "cluster store URL that does not parse", yaml: "cluster: {name: c, store: 'postgres://h:99999999/db'}",
			want: []string{"cluster store: bad configuration: the store URL is not a PostgreSQL URL"}},
		// startTopology: TopologySecret, then topology.New.
		{name: "topology secret file missing", yaml: "topology: {secret_file: DIR/secret}",
			want: []string{"topology: secret_file: open ", "/secret: no such file or directory"}},
		{name: "topology refresh under the node's minimum", yaml: "topology: {secret: " + longSecret + ", refresh: 500ms, max_age: 2s}",
			want: []string{"topology: need 0 < min originate (1s) <= refresh (500ms)"}},
		{name: "router id too long for link state", yaml: "topology: {secret: " + longSecret + "}", files: func(t *testing.T, _, cfg string) {
			replaceIn(t, cfg, "router_id: chk", "router_id: "+strings.Repeat("r", 129))
		}, want: []string{"topology: router id \"rrr", "want 1 to 128 characters"}},
		// LockState and routes.Restore: the state directory, file, journal,
		// and the brokers the saved routes name.
		{name: "state directory others may write to", yaml: "state_file: shared/routes.json", files: func(t *testing.T, dir, _ string) {
			if err := os.Mkdir(filepath.Join(dir, "shared"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "shared"), 0o777); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"state directory: directory ", "has mode 0777: other users may create, rename or delete files in it"}},
		{name: "state file damaged", files: func(t *testing.T, dir, _ string) {
			writeFile(t, filepath.Join(dir, "fedrouter-chk.routes.json"), "{not json")
		}, want: []string{"state file ", "is damaged", "move it away to start without its routes"}},
		{name: "state journal damaged", files: func(t *testing.T, dir, _ string) {
			p := saveState(t, dir)
			writeFile(t, p+routes.JournalSuffix, "garbage\n{\"del\": \"0123456789ab\"}\n")
		}, want: []string{"state journal ", "line 1 is damaged"}},
		{name: "saved route to a broker no longer configured", files: func(t *testing.T, dir, _ string) {
			saveState(t, dir, routes.Spec{Kind: routes.KindQueue, Src: "a", Dest: "b", Exchange: "amq.direct", Queue: "kept", Durable: true}, orphan)
		}, want: []string{"fedrouter-chk.routes.json:18: saved route gone(ex=amq.direct) <= a(queue=q) (id " + orphan.ID() + `): broker "gone" is not in brokers`,
			"; drop it: fedrouter state drop --config ", "router.yaml " + orphan.ID()}},
		// newGlobalDests: a broker that cannot hold the destinations.
		{name: "destinations on a broker that cannot hold them", yaml: "destinations:\n  - {name: orders, brokers: [a, b]}",
			want: []string{"cannot list or create queues: global destinations need the rabbitmq profile"}},
	}
}

// addToBroker adds fields to broker name's flow mapping in the file.
func addToBroker(t *testing.T, cfg, name, fields string) {
	t.Helper()
	replaceIn(t, cfg, "{name: "+name+", ", "{name: "+name+", "+fields+", ")
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s lacks %q (%v)", path, old, err)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCheckConfigRefusesWhatRunRefuses walks the start's refusals: each
// configuration is refused by check-config and by run, with status 2
// and the same words, before run starts anything (run gets a context
// that would stop a router it started: it must not get that far).
func TestCheckConfigRefusesWhatRunRefuses(t *testing.T) {
	t.Setenv("FEDROUTER_STORE_URL", "")
	for _, c := range startRefusals() {
		t.Run(c.name, func(t *testing.T) {
			_, cfg := writeCheckCase(t, c)
			checkOut, checkErr, checkCode := runCLI("check-config", cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var runOut, runErr bytes.Buffer
			runCode := runMain(ctx, []string{"fedrouter", "run", "--config", cfg}, &runOut, &runErr)
			if checkCode != 2 || runCode != 2 || checkOut != "" {
				t.Fatalf("check-config: exit %d, stdout %q, stderr:\n%s\nrun: exit %d, stderr:\n%s\nwant both exit 2", checkCode, checkOut, checkErr, runCode, runErr.String())
			}
			if checkErr != runErr.String() {
				t.Errorf("check-config and run refuse differently:\ncheck-config:\n%s\nrun:\n%s", checkErr, runErr.String())
			}
			if !strings.HasPrefix(checkErr, "fedrouter: config "+cfg+": ") {
				t.Errorf("not the configuration's error:\n%s", checkErr)
			}
			for _, w := range c.want {
				if !strings.Contains(checkErr, w) {
					t.Errorf("check-config does not say %q:\n%s", w, checkErr)
				}
			}
		})
	}
}

// TestCheckConfigNotesWhatItCannotRead: a state file another user owns
// (the router's, when check-config runs as someone else) is noted, not
// judged, by check-config; run, as this user, refuses it.
func TestCheckConfigNotesWhatItCannotRead(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	_, cfg := writeCheckCase(t, checkCase{yaml: "state_file: state/routes.json", files: func(t *testing.T, dir, _ string) {
		state := filepath.Join(dir, "state", "routes.json")
		if err := routes.SaveState(state, []routes.Spec{orphan.WithDefaults()}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(state, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}})
	out, errOut, code := runCLI("check-config", cfg)
	if code != 0 || !strings.Contains(out, ": ok (router chk, 2 brokers)\n") || !strings.Contains(out, "not checked: ") ||
		!strings.Contains(out, "owned by uid 65534") || !strings.Contains(out, "run check-config as that user") {
		t.Fatalf("check-config: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	_, errOut, code = runCLI("run", "--config", cfg)
	if code != 2 || !strings.Contains(errOut, "owned by uid 65534") {
		t.Fatalf("run: exit %d, stderr %s", code, errOut)
	}
	// The router's user's state directory: noted too, unless others may
	// write to it, which no user's router accepts.
	stateDir := filepath.Join(filepath.Dir(cfg), "state")
	if err := os.Chown(stateDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = runCLI("check-config", cfg); code != 0 || !strings.Contains(out, "not checked: ") || !strings.Contains(out, "directory "+stateDir+" is owned by uid 65534") {
		t.Fatalf("check-config, state directory of another user: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if err := os.Chmod(stateDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code = runCLI("check-config", cfg); code != 2 || !strings.Contains(errOut, "has mode 0777: other users may create") {
		t.Fatalf("check-config, a state directory others may write to: exit %d: %s", code, errOut)
	}
}

// TestStateDropClearsWhatCheckConfigNames: the command check-config gives
// for a saved route to a broker no longer configured drops that route,
// keeps the others (the journal's too), and the start is then allowed.
func TestStateDropClearsWhatCheckConfigNames(t *testing.T) {
	kept := routes.Spec{Kind: routes.KindQueue, Src: "a", Dest: "b", Exchange: "amq.direct", Queue: "kept", Durable: true}.WithDefaults()
	fromJournal := routes.Spec{Kind: routes.KindQueue, Src: "b", Dest: "a", Exchange: "amq.direct", Queue: "back", Durable: true}.WithDefaults()
	_, cfg := writeCheckCase(t, checkCase{files: func(t *testing.T, dir, _ string) {
		p := saveState(t, dir, kept, orphan)
		line, err := json.Marshal(map[string]routes.Spec{"add": fromJournal})
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, p+routes.JournalSuffix, string(line)+"\n")
	}})
	_, errOut, code := runCLI("check-config", cfg)
	i := strings.Index(errOut, "drop it: ")
	if code != 2 || i < 0 {
		t.Fatalf("check-config: exit %d: %s", code, errOut)
	}
	args := strings.Fields(strings.TrimSpace(errOut[i+len("drop it: "):]))
	if len(args) != 6 || args[0] != "fedrouter" {
		t.Fatalf("not a command: %q", errOut[i:])
	}
	if _, errOut, code := runCLI(args[1:3]...); code != 2 || !strings.HasPrefix(errOut, "usage: fedrouter state drop") {
		t.Fatalf("state drop without ids: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI("state", "drop", "--config", cfg, "000000000000"); code != 1 || !strings.Contains(errOut, `no saved route has id "000000000000"`) {
		t.Fatalf("state drop of an unknown id: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLI(args[1:]...)
	if code != 0 || out != "dropped saved route "+orphan.ID()+": gone(ex=amq.direct) <= a(queue=q)\n" {
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	if out, errOut, code := runCLI("check-config", cfg); code != 0 || !strings.HasSuffix(out, ": ok (router chk, 2 brokers)\n") {
		t.Fatalf("check-config after the drop: exit %d\n%s%s", code, out, errOut)
	}
	saved, _, err := routes.LoadJournaled(filepath.Join(filepath.Dir(cfg), "fedrouter-chk.routes.json"))
	if err != nil || len(saved) != 2 || saved[0].ID() != kept.ID() || saved[1].ID() != fromJournal.ID() {
		t.Fatalf("saved after the drop: %v, %v; want the kept route and the journal's", saved, err)
	}
}
