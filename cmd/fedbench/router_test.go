package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

func TestRouterConfigNamesTheDataPath(t *testing.T) {
	brokers := []broker{{Name: "rabbit1", Kind: "rabbitmq", URL: "amqp://127.0.0.1:5701"}, {Name: "rabbit2", Kind: "rabbitmq", URL: "amqp://127.0.0.1:5702"}}
	for _, path := range []string{"", routes.DataPathEngine} {
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

func TestCheckOnEngineRefusesARouteNotOnTheEngine(t *testing.T) {
	onEngine := routes.Status{ID: "r1", Detail: "forwarding on the engine data path"}
	viaTransit := routes.Status{ID: "r3", Detail: "through transit via rabbit2; on the engine data path"}
	unsaid := routes.Status{ID: "r2", Detail: "forwarding"}
	for _, tc := range []struct {
		sts []routes.Status
		bad string // the route named in the error; "" for none
	}{
		{[]routes.Status{onEngine, viaTransit}, ""},
		{[]routes.Status{onEngine, unsaid}, "r2"},
		{[]routes.Status{unsaid, onEngine}, "r2"},
	} {
		err := checkOnEngine(tc.sts)
		if (err != nil) != (tc.bad != "") || (err != nil && !strings.Contains(err.Error(), "route "+tc.bad+" ")) {
			t.Errorf("%v: err %v, want one naming %q", tc.sts, err, tc.bad)
		}
	}
}

func TestCasesGiveTheAckOnlyToTheEngineAckVariant(t *testing.T) {
	b := &bench{opt: options{NSmall: 100, Sizes: []int{256}, Many: 1, EngineAck: 100,
		Variants: []string{vRaw, vEngine, vEngineAck}}}
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
	for _, want := range []string{vRaw, vEngine, vEngineAck} {
		if !slices.Contains(got, want) {
			t.Errorf("the pre-settled pair's default cases %v lack %q", got, want)
		}
	}
}

// The variants of fedrouter on go-amqp are gone: asked for by name they
// are refused with the variant that measures the same on the engine, and
// every default name is a variant.
func TestParseVariantsRefusesTheGoAMQPVariantsByName(t *testing.T) {
	got, err := parseVariants(defaultVariantNames)
	if err != nil || len(got) != len(defaultVariantNames) || len(variantNames) != len(defaultVariantNames) {
		t.Fatalf("the defaults: %v, %v (names %d, defaults %d)", got, err, len(variantNames), len(defaultVariantNames))
	}
	for _, tc := range []struct{ name, want string }{
		{"fedrouter", "ask for engine"}, {"transit", "ask for transit-engine"}, {"go-amqp", "want one of raw, engine,"},
	} {
		_, err := parseVariants([]string{"raw", tc.name})
		if err == nil || !strings.Contains(err.Error(), `--variant "`+tc.name+`"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming it and %q", tc.name, err, tc.want)
		}
	}
}

// make bench runs fedbench's default variants: the Makefile and
// docs/performance.md list them, and the number of timed runs they give.
func TestTheDocsListTheDefaultVariantsAndTheirRuns(t *testing.T) {
	var vs []string
	for _, n := range defaultVariantNames {
		vs = append(vs, variantNames[n])
	}
	b := &bench{opt: options{NSmall: 100, NLarge: 10, Sizes: []int{256, 16 << 10}, Many: 8, EngineAck: 100, Variants: vs}}
	rabbit := pairDef{Name: "R", Shovel: true, Far: broker{Name: "rabbit3"}}
	all := len(b.cases([]pairDef{rabbit, {Name: "P", PreSettled: true}, {Name: "Q", QpidFed: true}}))
	noProton := len(b.cases([]pairDef{rabbit, {Name: "Q", QpidFed: true}}))
	list := strings.Join(defaultVariantNames, ",")
	for file, wants := range map[string][]string{
		"../../Makefile":            {list, fmt.Sprintf("%d timed runs", 3*all), fmt.Sprintf("BENCH_PAIRS=rabbitmq,qpidd:\n# %d)", noProton)},
		"../../docs/performance.md": {"`" + list + "`", fmt.Sprintf("%d timed runs", 3*all), fmt.Sprintf("a smoke run (%d runs)", all)},
	} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(string(text), w) {
				t.Errorf("%s does not say %q", file, w)
			}
		}
	}
}

func TestProfileSaysWhatProfilesTheEngineNow(t *testing.T) {
	app := &cli.App{Name: "fedbench", Commands: []*cli.Command{removedProfileCommand()}}
	err := app.Run([]string{"fedbench", "profile", "--pair", "proton"})
	if err == nil || !strings.Contains(err.Error(), "removed on 2026-12-05") || !strings.Contains(err.Error(), "BenchmarkForward") {
		t.Fatalf("err %v", err)
	}
}
