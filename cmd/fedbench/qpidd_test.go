package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestDefaultPairsDropsQpiddOnlyWhenItsBuildIsMissing(t *testing.T) {
	all := []string{"rabbitmq", "proton", "qpidd"}
	for _, tc := range []struct {
		name     string
		explicit bool
		avail    error
		want     []string
		line     bool
		err      bool
	}{
		{"found", false, nil, all, false, false},
		{"missing", false, errNoQpidd, []string{"rabbitmq", "proton"}, true, false},
		{"missing, wrapped", false, fmt.Errorf("%w: no script", errNoQpidd), []string{"rabbitmq", "proton"}, true, false},
		{"missing but asked for", true, errNoQpidd, all, false, false},
		{"script broken", false, errors.New("exit status 2"), nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, line, err := defaultPairs(all, tc.explicit, tc.avail)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("pairs %v, want %v", got, tc.want)
			}
			if (line != "") != tc.line || (tc.line && !strings.Contains(line, "skipped")) {
				t.Fatalf("line %q, want one: %v", line, tc.line)
			}
		})
	}
}

func TestCasesRunEachVariantOnlyWhereItApplies(t *testing.T) {
	b := &bench{opt: options{NSmall: 100, NLarge: 10, Sizes: []int{256}, Many: 8,
		Variants: []string{vRaw, vEngine, vShovel10, vQpidFed, vQdrouterd}}}
	var got []string
	for _, c := range b.cases([]pairDef{{Name: "R", Shovel: true}, {Name: "P", PreSettled: true}, {Name: "Q", QpidFed: true}}) {
		got = append(got, fmt.Sprintf("%s %s x%d %d", c.Pair, c.Variant, c.Routes, c.Messages))
	}
	want := []string{
		"R raw pipe x1 100", "R fedrouter engine x1 100", "R shovel amqp10 x1 100", "R Qpid Dispatch x1 100",
		"R raw pipe x8 96", "R fedrouter engine x8 96", "R shovel amqp10 x8 96", "R Qpid Dispatch x8 96",
		"P raw pipe x1 100", "P fedrouter engine x1 100", "P raw pipe x8 96", "P fedrouter engine x8 96",
		"Q raw pipe x1 100", "Q fedrouter engine x1 100", "Q qpidd federation x1 100", "Q Qpid Dispatch x1 100",
		"Q raw pipe x8 96", "Q fedrouter engine x8 96", "Q qpidd federation x8 96", "Q Qpid Dispatch x8 96",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cases\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSummarizeRatiosAgainstQpiddFederation(t *testing.T) {
	res := func(v string, rate float64) *result {
		return &result{caseSpec: caseSpec{Pair: "qpidd->qpidd", Size: 256, Variant: v, Routes: 1, Messages: 1000},
			Runs: []*sample{{Rate: rate, ProcCPU: 0.05}}}
	}
	raw, fed, qfed := res(vRaw, 20000), res(vEngine, 16000), res(vQpidFed, 80000)
	summarize([]*result{raw, fed, qfed})
	if fed.VsRaw == nil || *fed.VsRaw != 0.8 {
		t.Fatalf("fedrouter vs raw %v, want 0.8", fed.VsRaw)
	}
	if fed.VsQpidFed == nil || *fed.VsQpidFed != 0.2 {
		t.Fatalf("fedrouter vs qpidd federation %v, want 0.2", fed.VsQpidFed)
	}
	if fed.VsShovel != nil || qfed.VsQpidFed != nil || raw.VsQpidFed != nil {
		t.Fatalf("ratios where none belong: %v %v %v", fed.VsShovel, qfed.VsQpidFed, raw.VsQpidFed)
	}
	if fed.ProcCPUPer100k != 5 {
		t.Fatalf("router CPU per 100k %v, want 5", fed.ProcCPUPer100k)
	}
	rows := (&report{Results: []*result{raw, fed, qfed}}).resultRows()
	if !strings.Contains(rows, "0.20x") || !strings.Contains(rows, "qpidd federation\t80000\t-\t-\t(in broker)") {
		t.Fatalf("table rows:\n%s", rows)
	}
}

func TestAckIntervalDividesTheShare(t *testing.T) {
	for _, tc := range []struct{ per, credit, want int }{
		{50000, 500, 250}, {6250, 500, 250}, {625, 500, 125}, {1250, 500, 250},
		{997, 500, 1}, {100, 1, 1}, {300, 1000, 300},
	} {
		if got := ackInterval(tc.per, tc.credit); got != tc.want {
			t.Errorf("ackInterval(%d, %d) = %d, want %d", tc.per, tc.credit, got, tc.want)
		}
	}
}

func TestFederationObjectProperties(t *testing.T) {
	link, err := linkProps(broker{Name: "qpidd1", URL: "amqp://127.0.0.1:5901"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"host": "127.0.0.1", "port": uint16(5901), "transport": "tcp", "authMechanism": "ANONYMOUS", "durable": false}
	if !reflect.DeepEqual(link, want) {
		t.Fatalf("link %v, want %v", link, want)
	}
	if _, err := linkProps(broker{Name: "x", URL: "amqp://127.0.0.1:99999"}); err == nil {
		t.Fatal("a port beyond 65535 was accepted")
	}
	br := bridgeProps("L", "q", "x", 500, 250)
	if br["srcIsQueue"] != true || br["src"] != "q" || br["dest"] != "x" || br["link"] != "L" ||
		br["sync"] != uint16(250) || br["credit"] != uint32(500) || br["durable"] != false {
		t.Fatalf("bridge %v", br)
	}
}

func TestQMFIntegersAndDepths(t *testing.T) {
	for _, v := range []any{int64(7), int32(7), uint64(7), uint32(7), uint16(7), uint8(7), int8(7), int16(7)} {
		if n, ok := qmfInt(v); !ok || n != 7 {
			t.Errorf("qmfInt(%T) = %d, %v", v, n, ok)
		}
	}
	for _, v := range []any{nil, "7", 7.0, uint64(1 << 63)} {
		if _, ok := qmfInt(v); ok {
			t.Errorf("qmfInt(%T %v) accepted", v, v)
		}
	}
	off := holding(map[string]int64{"a": 5, "b": 4}, []string{"a", "b", "c"}, 5)
	if want := []string{"b holds 4", "c is missing"}; !reflect.DeepEqual(off, want) {
		t.Fatalf("holding %v, want %v", off, want)
	}
}
