package main

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/routes"
)

func TestBacklogDataPathsTakeTheEngineOnceAndRefuseGoAMQP(t *testing.T) {
	got, err := backlogDataPaths([]string{routes.DataPathEngine, routes.DataPathEngine})
	if err != nil || !reflect.DeepEqual(got, []string{routes.DataPathEngine}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, tc := range []struct{ paths, want []string }{
		{[]string{"engine", "go-amqp"}, []string{`--backlog-data-path "go-amqp"`, "removed on 2026-12-05", "want engine"}},
		{[]string{"proton"}, []string{`--backlog-data-path "proton"`, "want engine"}},
	} {
		got, err := backlogDataPaths(tc.paths)
		if err == nil {
			t.Errorf("%v: accepted as %v", tc.paths, got)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: err %q lacks %q", tc.paths, err, w)
			}
		}
	}
}

func TestReportPrintsAndChecksEveryBacklog(t *testing.T) {
	ok := &backlogResult{DataPath: routes.DataPathEngine, Messages: 1000, Size: 256, Verified: "ok", RSSMaxKiB: 2048}
	failed := &backlogResult{DataPath: routes.DataPathEngine, Error: "route r1 is not on the engine data path"}
	r := &report{Backlogs: []*backlogResult{ok, failed}}
	var out bytes.Buffer
	if err := r.print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"backlog on engine: 1000 x 256 B", "max 2.0 / final", "backlog on engine: FAILED: route r1 is not on the engine data path"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
	if err := r.failures(); !errors.Is(err, errFailures) {
		t.Errorf("a failed backlog: failures() = %v", err)
	}
	unverified := *ok
	unverified.Verified = "2 messages left at the source"
	for _, tc := range []struct {
		bls  []*backlogResult
		fail bool
	}{{[]*backlogResult{ok}, false}, {[]*backlogResult{ok, &unverified}, true}} {
		if err := (&report{Backlogs: tc.bls}).failures(); (err != nil) != tc.fail {
			t.Errorf("backlogs %v: failures() = %v, want failing %v", tc.bls, err, tc.fail)
		}
	}
}
