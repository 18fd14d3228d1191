package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

func TestRouterConfigNamesTheDataPath(t *testing.T) {
	brokers := []broker{{Name: "rabbit1", Kind: "rabbitmq", URL: "amqp://127.0.0.1:5701"}, {Name: "rabbit2", Kind: "rabbitmq", URL: "amqp://127.0.0.1:5702"}}
	for _, path := range []string{"", routes.DataPathGoAMQP, routes.DataPathEngine} {
		text := routerConfig(t.TempDir(), newToken(), 8080, routerSpec{Conns: 1, Brokers: brokers, DataPath: path})
		cfg, err := config.Parse("fedrouter.yaml", []byte(text))
		if err != nil {
			t.Fatalf("data path %q: %v\n%s", path, err, text)
		}
		if cfg.DataPath != path {
			t.Errorf("data path %q: the configuration says %q", path, cfg.DataPath)
		}
	}
}

func TestCheckDataPathRefusesARouteOnTheOtherPath(t *testing.T) {
	onEngine := routes.Status{ID: "r1", Detail: "forwarding on the engine data path"}
	onGoAMQP := routes.Status{ID: "r2"}
	for _, tc := range []struct {
		path string
		sts  []routes.Status
		bad  string // the route named in the error; "" for none
	}{
		{routes.DataPathEngine, []routes.Status{onEngine}, ""},
		{routes.DataPathEngine, []routes.Status{onEngine, onGoAMQP}, "r2"},
		{routes.DataPathGoAMQP, []routes.Status{onGoAMQP}, ""},
		{routes.DataPathGoAMQP, []routes.Status{onEngine}, "r1"},
	} {
		err := checkDataPath(tc.sts, tc.path)
		if (err != nil) != (tc.bad != "") || (err != nil && !strings.Contains(err.Error(), "route "+tc.bad+" ")) {
			t.Errorf("%s, %v: err %v, want one naming %q", tc.path, tc.sts, err, tc.bad)
		}
	}
}

func TestCasesGiveTheAckOnlyToTheEngineAckVariant(t *testing.T) {
	b := &bench{opt: options{NSmall: 100, Sizes: []int{256}, Many: 1, EngineAck: 100,
		Variants: []string{vFedrouter, vEngine, vEngineAck}}}
	cs := b.cases([]pairDef{{Name: "R", Shovel: true}})
	if len(cs) != 3 {
		t.Fatalf("cases %v", cs)
	}
	for _, c := range cs {
		if want := map[bool]int{true: 100}[c.Variant == vEngineAck]; c.Ack != want {
			t.Errorf("%s: ack %d, want %d", c, c.Ack, want)
		}
	}
}

// The Proton C broker sends every message pre-settled: the engine
// variants still run there (nothing to settle at the source), and make
// bench's default variants hold them.
func TestDefaultVariantsRunTheEngineOnThePreSettledPair(t *testing.T) {
	var defaults []string
	for _, f := range runFlags() {
		if sf, ok := f.(*cli.StringSliceFlag); ok && sf.Name == "variant" {
			for _, v := range sf.Value.Value() {
				defaults = append(defaults, variantNames[v])
			}
		}
	}
	b := &bench{opt: options{NSmall: 100, Sizes: []int{256}, Many: 1, EngineAck: 100, Variants: defaults}}
	var got []string
	for _, c := range b.cases([]pairDef{{Name: "P", PreSettled: true}}) {
		got = append(got, c.Variant)
	}
	for _, want := range []string{vRaw, vFedrouter, vEngine, vEngineAck} {
		if !slices.Contains(got, want) {
			t.Errorf("the pre-settled pair's default cases %v lack %q", got, want)
		}
	}
}
