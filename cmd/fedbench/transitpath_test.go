package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/routes"
)

// linkAnswer is a router's link list with its transit queues at from:
// the one for far that carried messages, its data_path only when path is
// set, and two that must be left out (for another destination; idle).
func linkAnswer(t *testing.T, from, path string) linkList {
	t.Helper()
	dp := ""
	if path != "" {
		dp = `, "data_path": "` + path + `"`
	}
	js := `[{"src": "x", "dest": "far", "state": "Operational", "transit": [
		{"broker": "` + from + `", "dest": "far", "queue": "fedrouter.transit.far", "forwarded": 10` + dp + `},
		{"broker": "` + from + `", "dest": "other", "queue": "fedrouter.transit.other", "forwarded": 3, "data_path": "go-amqp"},
		{"broker": "` + from + `", "dest": "far", "queue": "fedrouter.transit.idle", "forwarded": 0, "data_path": "go-amqp"}]},
		{"src": "y", "dest": "z", "routes": 2}]`
	var ll linkList
	if err := json.Unmarshal([]byte(js), &ll); err != nil {
		t.Fatal(err)
	}
	return ll
}

func TestWayHopsSayWhatEachForwarderRanOn(t *testing.T) {
	sts := []routes.Status{{ID: "r1", Detail: "forwarding on the engine data path"}, {ID: "r2", Detail: "through transit via mid"}}
	got, err := wayHops(sts, linkAnswer(t, "src", "engine"), linkAnswer(t, "mid", ""), "far")
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, h := range got {
		s = append(s, h.String())
	}
	want := []string{"fedbench-a route r1: engine", `fedbench-a route r2: not engine (detail "through transit via mid")`,
		"fedbench-a transit src>far: engine", "fedbench-b transit mid>far: unreported"}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("hops\n%q\nwant\n%q", s, want)
	}
	if _, err := wayHops(sts, linkAnswer(t, "src", "engine"), nil, "far"); err == nil || !strings.Contains(err.Error(), "fedbench-b") {
		t.Errorf("B carried nothing: err %v, want one naming fedbench-b", err)
	}
}

func TestCheckHopsFailsAForwarderNotOnTheEngine(t *testing.T) {
	eng := transitHop{Router: routerA, What: "route r1", Path: routes.DataPathEngine}
	notEng := transitHop{Router: routerA, What: "route r1", Path: pathNotEngine + ` (detail "forwarding")`}
	unrep := transitHop{Router: routerB, What: "transit mid>far", Path: pathUnreported}
	for _, tc := range []struct {
		hops      []transitHop
		mentioned string // "" for no error
	}{
		{[]transitHop{eng, eng}, ""},
		{[]transitHop{eng, unrep}, "fedbench-b transit mid>far: unreported"},
		{[]transitHop{notEng, eng}, `fedbench-a route r1: not engine (detail "forwarding")`},
	} {
		err := checkHops(tc.hops)
		if (err != nil) != (tc.mentioned != "") || err != nil && !strings.Contains(err.Error(), tc.mentioned) {
			t.Errorf("%v: err %v, want one naming %q", tc.hops, err, tc.mentioned)
		}
		if err != nil && !errors.Is(err, errNotRetried) {
			t.Errorf("%v: %v is retried", tc.hops, err)
		}
	}
}

// A transit forwarder not on the engine fails the case, once: the engine
// is the only data path, so that is a router's defect, which a second
// run would find again; the bench exits non-zero.
func TestNotOnTheEngineFailsTheCaseWithoutRunningItAgain(t *testing.T) {
	res := &result{caseSpec: caseSpec{Pair: "R", Size: 256, Variant: vTransitEngine, Routes: 1, Messages: 10}}
	run, calls := attempts(checkHops([]transitHop{{Router: routerA, What: "route r1", Path: pathUnreported}}))
	if err := runWithRetry(context.Background(), res, 1, 1, time.Now(), run); err != nil {
		t.Fatal(err)
	}
	if *calls != 1 || len(res.Runs)+len(res.Retried) != 0 || len(res.Errors) != 1 {
		t.Fatalf("%d calls, %+v", *calls, res)
	}
	r := &report{Results: []*result{res}}
	if err := r.failures(); !errors.Is(err, errFailures) {
		t.Errorf("failures() = %v: a forwarder not on the engine fails the bench", err)
	}
	var out bytes.Buffer
	if err := r.print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FAILED: R 256 B fedrouter transit engine x1 (10 msgs): ", "not on the engine data path: fedbench-a route r1: unreported\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCasesRunTransitWhereThereIsAThirdNode(t *testing.T) {
	b := &bench{opt: options{NSmall: 100, Sizes: []int{256}, Many: 1, Variants: []string{vTransitEngine}}}
	var got []string
	for _, c := range b.cases([]pairDef{{Name: "R", Shovel: true, Far: broker{Name: "rabbit3"}}, {Name: "R2", Shovel: true}, {Name: "P", PreSettled: true}}) {
		got = append(got, c.Pair+" "+c.Variant)
	}
	if want := []string{"R " + vTransitEngine}; !reflect.DeepEqual(got, want) {
		t.Fatalf("cases %q, want %q", got, want)
	}
}
