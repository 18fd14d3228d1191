package router

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

// planOf renders a plan in one line per part, for the table's wants.
func planOf(p reloadPlan) string {
	ids := func(rs []configRoute) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.id)
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("add=%s remove=%s replace=%s unchanged=%d redial=%s token=%v level=%s refused=%q",
		ids(p.add), ids(p.remove), ids(p.replace), p.unchanged, strings.Join(p.redial, ","), p.token, p.level, p.refused)
}

func route(id, queue string, credit int, at string) configRoute {
	return configRoute{id: id, at: at, spec: routes.Spec{Kind: routes.KindQueue, Src: "a", Dest: "b", Exchange: "x", Queue: queue, Credit: credit}}
}

func baseInput() reloadInput {
	return reloadInput{
		routes: []configRoute{route("r1", "q1", 100, "f:10"), route("r2", "q2", 100, "f:14"), route("r3", "q3", 100, "f:18")},
		brokers: map[string]brokerSums{
			"a": {dial: "dA", mgmt: "mA", at: "f:3"},
			"b": {dial: "dB", mgmt: "mB", at: "f:6"},
		},
		fixed:    []config.Setting{{Key: "admin.listen", At: "f:2", Sum: "L"}, {Key: "router_id", At: "f:1", Sum: "R"}},
		tokenSum: "T", level: "info",
	}
}

func TestPlanReload(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(*reloadInput)
		running map[string]routes.Origin
		cluster bool
		want    string
	}{
		{name: "same file", edit: func(*reloadInput) {},
			want: `add= remove= replace= unchanged=3 redial= token=false level= refused=[]`},
		{name: "one added, one removed, one changed, one unchanged",
			edit: func(in *reloadInput) {
				in.routes = []configRoute{route("r1", "q1", 100, "f:10"), route("r3", "q3", 500, "f:14"), route("r4", "q4", 100, "f:18")}
			},
			want: `add=r4 remove=r2 replace=r3 unchanged=1 redial= token=false level= refused=[]`},
		{name: "a broker's password or TLS file changed: re-dialled, only that one",
			edit: func(in *reloadInput) { in.brokers["b"] = brokerSums{dial: "dB2", mgmt: "mB", at: "f:6"} },
			want: `add= remove= replace= unchanged=3 redial=b token=false level= refused=[]`},
		{name: "token and log level",
			edit: func(in *reloadInput) { in.tokenSum, in.level = "T2", "debug" },
			want: `add= remove= replace= unchanged=3 redial= token=true level=debug refused=[]`},
		{name: "fixed settings refused, naming the key and its line, nothing else done",
			edit: func(in *reloadInput) {
				in.fixed = []config.Setting{{Key: "admin.listen", At: "f:2", Sum: "L2"}, {Key: "router_id", At: "f:1", Sum: "R2"}}
				in.tokenSum = "T2"
			},
			want: `add= remove= replace= unchanged=3 redial= token=true level= refused=["f:1: router_id cannot change while the router runs: restart the router to apply it, or put it back" "f:2: admin.listen cannot change while the router runs: restart the router to apply it, or put it back"]`},
		{name: "the management API's settings refused",
			edit: func(in *reloadInput) { in.brokers["a"] = brokerSums{dial: "dA2", mgmt: "mA2", at: "f:3"} },
			want: `add= remove= replace= unchanged=3 redial= token=false level= refused=["f:3: brokers[a]: the management API's settings (management.url, username, password, vhost, or the username and password it borrows from the broker's) cannot change while the router runs: restart the router to apply them, or put them back"]`},
		{name: "a configured route taking a runtime route's id refused",
			edit: func(in *reloadInput) {
				in.routes = append(in.routes, route("rt", "qt", 100, "f:22"))
			},
			running: map[string]routes.Origin{"r1": routes.OriginConfig, "rt": routes.OriginRuntime},
			want:    `add= remove= replace= unchanged=3 redial= token=false level= refused=["f:22: route b(ex=x) <= a(queue=qt) (id rt) runs already as a runtime route: delete it first (fedrouter route del rt), then reload"]`},
		{name: "the driver's problems refuse the reload",
			edit: func(in *reloadInput) { in.problems = []string{"f:30: route ...: routes: unknown broker: c"} },
			want: `add= remove= replace= unchanged=3 redial= token=false level= refused=["f:30: route ...: routes: unknown broker: c"]`},
		{name: "a cluster member's routes do not reload",
			edit: func(in *reloadInput) { in.routes = in.routes[:2] }, cluster: true,
			want: `add= remove=r3 replace= unchanged=2 redial= token=false level= refused=["f:10: routes: a cluster member's configured routes live in the cluster's store and change at its next start, not by a reload"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, next := baseInput(), baseInput()
			tc.edit(&next)
			got := planOf(planReload(old, next, tc.running, tc.cluster))
			if got != tc.want {
				t.Errorf("plan\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A plan is deterministic: the brokers map's order does not show.
func TestPlanReloadDeterministic(t *testing.T) {
	old, next := baseInput(), baseInput()
	for _, n := range []string{"c", "d", "e", "f"} {
		old.brokers[n] = brokerSums{dial: "x", mgmt: "m"}
		next.brokers[n] = brokerSums{dial: "y", mgmt: "m"}
	}
	first := planReload(old, next, nil, false)
	for range 20 {
		if p := planReload(old, next, nil, false); !reflect.DeepEqual(p.redial, first.redial) {
			t.Fatalf("redial %v then %v", first.redial, p.redial)
		}
	}
	if strings.Join(first.redial, ",") != "c,d,e,f" {
		t.Fatalf("redial %v", first.redial)
	}
}

// One reload at a time: while one holds the slot, another is refused at
// once with ErrReloadBusy, reading nothing.
func TestReloadBusyRefused(t *testing.T) {
	r := &Router{reload: newReloader()}
	r.reload.slot <- struct{}{} // a reload in progress
	_, err := r.Reload(t.Context())
	var re *ReloadError
	if !errors.As(err, &re) || !errors.Is(err, ErrReloadBusy) {
		t.Fatalf("second reload: %v", err)
	}
}
