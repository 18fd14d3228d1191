package router

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fedrouter/fedrouter/routes"
)

// A Stalled route is counted under its state, shows
// fedrouter_route_stalled 1 and fedrouter_route_up 0 (it forwards
// nothing), and keeps its series first past route_series.
func TestMetricsStalledRoute(t *testing.T) {
	spec := routes.Spec{Kind: routes.KindQueue, Src: "a", Dest: "b", Exchange: "x", Queue: "q"}
	stalled := routes.Status{ID: "s1", Spec: spec, State: routes.StateStalled}
	list := []routes.Status{{ID: "o1", Spec: spec, State: routes.StateOperational}, stalled}
	ch := make(chan prometheus.Metric, 1000)
	serviceCollector{routeSeries: 1}.collectRoutes(ch, list)
	close(ch)
	got := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		name := m.Desc().String()
		name = name[strings.Index(name, `"`)+1:]
		name = name[:strings.Index(name, `"`)]
		var labels []string
		for _, l := range d.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		got[name+"{"+strings.Join(labels, ",")+"}"] = d.GetGauge().GetValue()
	}
	for k, want := range map[string]float64{
		"fedrouter_routes{state=Stalled}":                1,
		"fedrouter_routes{state=Operational}":            1,
		"fedrouter_route_stalled{dest=b,route=s1,src=a}": 1,
		"fedrouter_route_up{dest=b,route=s1,src=a}":      0,
		"fedrouter_route_series_omitted{}":               1,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v; got %v", k, v, ok, want, got)
		}
	}
	if _, ok := got["fedrouter_route_stalled{dest=b,route=o1,src=a}"]; ok {
		t.Errorf("the Operational route has series of its own past route_series 1: the Stalled one must come first")
	}
}
