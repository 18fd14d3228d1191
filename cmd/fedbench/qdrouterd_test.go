package main

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestQdrouterdDirLooksWhereQpiddShIsLookedFor(t *testing.T) {
	root := "/w/wt/clone"
	bin := func(d string) string { return filepath.Join(d, "bin", "qdrouterd") }
	for _, tc := range []struct {
		name  string
		env   string
		found []string // directories holding an executable bin/qdrouterd
		want  string
		err   error // errNoQdrouterd, or nil; other errors: wantErr
		other bool
	}{
		{"env", "/opt/qdr", []string{"/opt/qdr", "/w/wt/shared/peers/qdrouterd"}, "/opt/qdr", nil, false},
		{"env wrong: no fallback", "/opt/none", []string{"/w/wt/shared/peers/qdrouterd"}, "", nil, true},
		{"beside the clone", "", []string{"/w/wt/shared/peers/qdrouterd", "/w/shared/peers/qdrouterd"}, "/w/wt/shared/peers/qdrouterd", nil, false},
		{"two up", "", []string{"/w/shared/peers/qdrouterd", qdrouterdFallback}, "/w/shared/peers/qdrouterd", nil, false},
		{"fallback", "", []string{qdrouterdFallback}, qdrouterdFallback, nil, false},
		{"absent", "", nil, "", errNoQdrouterd, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			has := map[string]bool{}
			for _, d := range tc.found {
				has[bin(d)] = true
			}
			got, err := qdrouterdDir(tc.env, root, func(p string) bool { return has[p] })
			switch {
			case tc.other:
				if err == nil || errors.Is(err, errNoQdrouterd) || !strings.Contains(err.Error(), "FEDROUTER_QDROUTERD_DIR") {
					t.Fatalf("err %v, want one naming FEDROUTER_QDROUTERD_DIR", err)
				}
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
			case err != nil || got != tc.want:
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDefaultVariantsDropQdrouterdOnlyWhenItsBuildIsMissing(t *testing.T) {
	all := []string{vRaw, vEngine, vQdrouterd}
	for _, tc := range []struct {
		name     string
		variants []string
		explicit bool
		avail    error
		want     []string
		line     bool
		err      bool
	}{
		{"found", all, false, nil, all, false, false},
		{"missing", all, false, errNoQdrouterd, []string{vRaw, vEngine}, true, false},
		{"missing but asked for", all, true, errNoQdrouterd, nil, false, true},
		{"missing, not wanted", []string{vRaw}, true, errNoQdrouterd, []string{vRaw}, false, false},
		{"binary broken", all, false, errors.New("exit status 127"), nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, line, err := defaultVariants(tc.variants, tc.explicit, tc.avail)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("variants %v, want %v", got, tc.want)
			}
			if (line != "") != tc.line || (tc.line && !strings.Contains(line, "skipped")) {
				t.Fatalf("line %q, want one: %v", line, tc.line)
			}
		})
	}
}

func TestQdrConfigOneWorkerThreadAndEveryConnectorsCapacity(t *testing.T) {
	rabbit1 := broker{Name: "rabbit1", Kind: "rabbitmq", URL: "amqp://127.0.0.1:5701"}
	qpidd2 := broker{Name: "qpidd2", Kind: kindQpidd, URL: "amqp://127.0.0.1:5902"}
	got, err := qdrConfig(qdrSpec{Port: 40001, Log: "/tmp/x/qdrouterd.log",
		Connectors: []qdrConnector{{Name: "src0", Broker: rabbit1, Capacity: 2000}, {Name: "dst0", Broker: qpidd2, Capacity: 2000}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `router {
    mode: standalone
    id: fedbench
    workerThreads: 1
}
listener {
    host: 127.0.0.1
    port: 40001
    role: normal
    authenticatePeer: no
    saslMechanisms: ANONYMOUS
}
log {
    module: DEFAULT
    enable: warning+
    outputFile: /tmp/x/qdrouterd.log
}
connector {
    name: src0
    host: 127.0.0.1
    port: 5701
    role: route-container
    linkCapacity: 2000
    saslMechanisms: PLAIN
    saslUsername: guest
    saslPassword: pass:guest
}
connector {
    name: dst0
    host: 127.0.0.1
    port: 5902
    role: route-container
    linkCapacity: 2000
    saslMechanisms: ANONYMOUS
}
`
	if got != want {
		t.Fatalf("config\n%s\nwant\n%s", got, want)
	}
	if _, err := qdrConfig(qdrSpec{Connectors: []qdrConnector{{Name: "src0", Broker: broker{Name: "bad", URL: "amqp://nohostport"}}}}); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("a broker URL without a port: err %v, want one naming the broker", err)
	}
}

func TestQdrAutoLinksPairAnOutAndAnInLinkPerRouteOnPhaseZero(t *testing.T) {
	p := pairDef{Src: broker{Kind: "rabbitmq"}, Dst: broker{Kind: "rabbitmq"}}
	o := runObjs{pair: p, srcQ: []string{"q0", "q1", "q2"}, dstX: []string{"x0", "x1", "x2"}, shovs: []string{"s0", "s1", "s2"}}
	outs, ins := qdrAutoLinks(o, 2)
	wantOuts := []qdrAutoLink{
		{"s0.out", "s0", "dst0", "out", "/exchange/x0"},
		{"s1.out", "s1", "dst1", "out", "/exchange/x1"},
		{"s2.out", "s2", "dst0", "out", "/exchange/x2"},
	}
	wantIns := []qdrAutoLink{
		{"s0.in", "s0", "src0", "in", "/amq/queue/q0"},
		{"s1.in", "s1", "src1", "in", "/amq/queue/q1"},
		{"s2.in", "s2", "src0", "in", "/amq/queue/q2"},
	}
	if !reflect.DeepEqual(outs, wantOuts) || !reflect.DeepEqual(ins, wantIns) {
		t.Fatalf("outs %v\nins %v", outs, ins)
	}
	a := ins[1].attrs()
	if a["phase"] != int64(0) || a["direction"] != "in" || a["connection"] != "src1" || a["address"] != "s1" || a["externalAddress"] != "/amq/queue/q1" {
		t.Fatalf("attrs %v", a)
	}
	if got := qdrConnectors(p, 2, 2000); len(got) != 4 || got[3].Name != "dst1" || got[3].Capacity != 2000 {
		t.Fatalf("connectors %v", got)
	}
}

func TestParseQueryRefusesWhatDoesNotFit(t *testing.T) {
	good := map[any]any{"attributeNames": []any{"linkDir", "acceptedCount"},
		"results": []any{[]any{"in", int64(5)}, []any{"out", int64(7)}}}
	rows, err := parseQuery(good)
	if err != nil {
		t.Fatal(err)
	}
	if want := []map[string]any{{"linkDir": "in", "acceptedCount": int64(5)}, {"linkDir": "out", "acceptedCount": int64(7)}}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v", rows)
	}
	many := make([]any, qdrMaxRows+1)
	for i := range many {
		many[i] = []any{"in"}
	}
	for name, body := range map[string]any{
		"not a map":      "x",
		"no names":       map[string]any{"results": []any{}},
		"no results":     map[string]any{"attributeNames": []any{"a"}},
		"short row":      map[string]any{"attributeNames": []any{"a", "b"}, "results": []any{[]any{"x"}}},
		"name not text":  map[string]any{"attributeNames": []any{int64(1)}, "results": []any{}},
		"too many rows":  map[string]any{"attributeNames": []any{"a"}, "results": many},
		"map key binary": map[any]any{int64(1): "x"},
	} {
		if _, err := parseQuery(body); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCountLinksCountsOnlyTheRunsLinks(t *testing.T) {
	links := []map[string]any{
		{"linkDir": "in", "owningAddr": "M0run.s0", "acceptedCount": int64(1500), "presettledCount": int64(0), "unsettledCount": int64(12)},
		{"linkDir": "in", "owningAddr": "M0run.s1", "acceptedCount": uint32(0), "presettledCount": int64(700)}, // the Proton broker pre-settles
		{"linkDir": "out", "owningAddr": "M0run.s0", "acceptedCount": int64(1500), "unsettledCount": int64(5)}, // the same messages, at the destination
		{"linkDir": "out", "owningAddr": "M0run.s1", "presettledCount": int64(600), "droppedPresettledCount": int64(100)},
		{"linkDir": "in", "owningAddr": "M0other", "acceptedCount": int64(99), "unsettledCount": int64(1), "droppedPresettledCount": int64(3)},
		{"linkDir": "in", "owningAddr": nil, "acceptedCount": int64(99)}, // the management reply link
		{"linkDir": "in", "owningAddr": "M", "acceptedCount": int64(99)},
	}
	got := countLinks(links, map[string]bool{"run.s0": true, "run.s1": true})
	if want := (qdrCounts{settled: 2200, unsettled: 12, dropped: 100, ins: 2}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}

func TestConnectorsDownAndAutoLinksFailedSayWhich(t *testing.T) {
	down := connectorsDown([]map[string]any{
		{"name": "src0", "connectionStatus": "SUCCESS"},
		{"name": "dst0", "connectionStatus": "CONNECTING", "connectionMsg": "Connection refused"},
	})
	if len(down) != 1 || !strings.Contains(down[0], "dst0") || !strings.Contains(down[0], "refused") {
		t.Fatalf("down %v", down)
	}
	failed := autoLinksFailed([]map[string]any{
		{"address": "run.s0", "direction": "in", "operStatus": "active"},
		{"address": "run.s1", "direction": "out", "operStatus": "failed", "lastError": "amqp:not-found"},
		{"address": "other", "direction": "out", "operStatus": "failed", "lastError": "x"},
	}, map[string]bool{"run.s0": true, "run.s1": true})
	if len(failed) != 1 || !strings.Contains(failed[0], "run.s1 out: amqp:not-found") {
		t.Fatalf("failed %v", failed)
	}
}
