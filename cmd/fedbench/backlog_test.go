package main

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/routes"
)

func TestBacklogDataPathsTakesEachPathOnceAndRefusesOthers(t *testing.T) {
	got, err := backlogDataPaths([]string{routes.DataPathEngine, routes.DataPathGoAMQP, routes.DataPathEngine})
	if err != nil || !reflect.DeepEqual(got, []string{routes.DataPathEngine, routes.DataPathGoAMQP}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := backlogDataPaths([]string{"go-amqp", "proton"}); err == nil || !strings.Contains(err.Error(), `--backlog-data-path "proton"`) {
		t.Fatalf("a data path that does not exist: err %v, want one naming it", err)
	}
}

func TestReportPrintsAndChecksEveryDataPathsBacklog(t *testing.T) {
	ok := &backlogResult{DataPath: routes.DataPathGoAMQP, Messages: 1000, Size: 256, Verified: "ok", RSSMaxKiB: 2048}
	failed := &backlogResult{DataPath: routes.DataPathEngine, Error: "route r1 is not on the engine data path"}
	r := &report{Backlogs: []*backlogResult{ok, failed}}
	var out bytes.Buffer
	if err := r.print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"backlog on go-amqp: 1000 x 256 B", "max 2.0 / final", "backlog on engine: FAILED: route r1 is not on the engine data path"} {
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
