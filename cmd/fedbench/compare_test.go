package main

import (
	"bytes"
	"strings"
	"testing"
)

// benchResults are two pairs' results as a run would leave them: every
// variant measured, one case failed twice and one retried.
func benchResults() []*result {
	res := func(pair, variant string, rate, proc, brokers float64) *result {
		r := &result{caseSpec: caseSpec{Pair: pair, Size: 256, Variant: variant, Routes: 1, Messages: 100000}}
		if rate > 0 {
			r.Runs = []*sample{{Rate: rate, ProcCPU: proc, BrokerCPU: brokers, Verified: "ok"}}
		}
		return r
	}
	rs := []*result{
		res("RabbitMQ->RabbitMQ", vRaw, 9100, 3.6, 15),
		res("RabbitMQ->RabbitMQ", vFedrouter, 9394, 4.36, 16),
		res("RabbitMQ->RabbitMQ", vQdrouterd, 7351, 2.52, 17),
		res("RabbitMQ->RabbitMQ", vShovel091, 12000, 0, 14),
		res("RabbitMQ->RabbitMQ", vShovel10, 0, 0, 0),
		res("qpidd->qpidd", vRaw, 24000, 3.5, 3),
		res("qpidd->qpidd", vFedrouter, 37801, 2.72, 3.2),
		res("qpidd->qpidd", vQdrouterd, 98769, 1.04, 2),
		res("qpidd->qpidd", vQpidFed, 128280, 0, 1.4),
	}
	rs[4].Errors = []string{"shovel terminated"}
	rs[4].Retried = []string{"round 1: shovel terminated"}
	rs[2].Retried = []string{"round 1: setup: 500 internal error"}
	summarize(rs)
	return rs
}

func TestComparisonPutsEachForwarderSideBySide(t *testing.T) {
	h, rows := comparison(benchResults(), true)
	got := markdownRows(h, rows)
	want := `| pair | size | routes | fedrouter msg/s | Qpid Dispatch msg/s | raw pipe msg/s | shovel 0-9-1 msg/s | shovel 1.0 msg/s | qpidd federation msg/s | fedrouter CPU (total) | Qpid Dispatch CPU (total) | raw pipe CPU (total) | shovel 0-9-1 CPU total | shovel 1.0 CPU total | qpidd federation CPU total | fedrouter / Qpid Dispatch msg/s | fedrouter / Qpid Dispatch CPU |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| RabbitMQ->RabbitMQ | 256 B | 1 | 9,394 | 7,351 | 9,100 | 12,000 | FAILED | - | 4.36 (20.36) | 2.52 (19.52) | 3.60 (18.60) | 14.00 | FAILED | - | 1.28x | 1.73x |
| qpidd->qpidd | 256 B | 1 | 37,801 | 98,769 | 24,000 | - | - | 128,280 | 2.72 (5.92) | 1.04 (3.04) | 3.50 (6.50) | - | - | 1.40 | 0.38x | 2.62x |
`
	if got != want {
		t.Fatalf("table\n%s\nwant\n%s", got, want)
	}
}

func TestComparisonLeavesOutVariantsNotRun(t *testing.T) {
	var rs []*result
	for _, r := range benchResults() {
		if r.Variant == vRaw || r.Variant == vFedrouter {
			rs = append(rs, r)
		}
	}
	h, _ := comparison(rs, false)
	if got := strings.Join(h, "|"); got != "pair|size|routes|fedrouter msg/s|raw pipe msg/s|fedrouter CPU (total)|raw pipe CPU (total)" {
		t.Fatalf("header %s", got)
	}
}

func TestReportShowsRetriesAndFailures(t *testing.T) {
	r := &report{Results: benchResults(), Versions: map[string]string{}}
	var out bytes.Buffer
	if err := r.print(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"retried: RabbitMQ->RabbitMQ 256 B Qpid Dispatch x1 (100000 msgs): round 1: setup: 500 internal error",
		"FAILED: RabbitMQ->RabbitMQ 256 B shovel amqp10 x1 (100000 msgs): shovel terminated",
		"1/1 (1 retried)", "0/1 (1 retried)", "side by side", "9394", "0.38x",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	if r.failures() == nil {
		t.Error("a case that failed twice: the bench must fail")
	}
	r.Results = r.Results[:4] // without it: the retried case alone fails nothing
	if err := r.failures(); err != nil {
		t.Errorf("a retried run that then succeeded: %v", err)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 128280: "128,280", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %s, want %s", n, got, want)
		}
	}
}
