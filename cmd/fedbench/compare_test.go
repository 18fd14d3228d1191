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
		if variant == vEngineAck {
			r.Ack = 100
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
		res("RabbitMQ->RabbitMQ", vEngine, 14000, 1.2, 15),
		res("RabbitMQ->RabbitMQ", vEngineAck, 16000, 0.9, 12),
		res("qpidd->qpidd", vEngine, 90000, 0.9, 2),
		res("qpidd->qpidd", vEngineAck, 0, 0, 0),
	}
	rs[4].Errors = []string{"shovel terminated"}
	rs[4].Retried = []string{"round 1: shovel terminated"}
	rs[2].Retried = []string{"round 1: setup: 500 internal error"}
	rs[12].Errors = []string{"route r1 is not on the engine data path"}
	summarize(rs)
	return rs
}

// The figures of benchResults worked out by hand: e.g. RabbitMQ's engine
// with ack, 16,000 msg/s on 0.9 s per 100,000 messages, against Qpid
// Dispatch's 7,351 on 2.52 (2.18x, 0.36x), the raw pipe's 9,100 (1.76x),
// go-amqp's 9,394 on 4.36 (1.70x, 0.21x), the best shovel's 12,000
// (1.33x; the 1.0 shovel failed).
func TestComparisonPutsEachForwarderSideBySide(t *testing.T) {
	h, rows := comparison(benchResults(), true)
	got := markdownRows(h, rows, cmpTextCols)
	want := `| pair | size | routes | forwarder | msg/s | router CPU s/100k | router µs/msg | total CPU s/100k | / Qpid Dispatch msg/s | / Qpid Dispatch CPU | / raw pipe msg/s | / go-amqp msg/s | / go-amqp CPU | / native msg/s |
|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| RabbitMQ->RabbitMQ | 256 B | 1 | fedrouter engine, ack 100 | 16,000 | 0.90 | 9.0 | 12.90 | 2.18x | 0.36x | 1.76x | 1.70x | 0.21x | 1.33x |
| RabbitMQ->RabbitMQ | 256 B | 1 | fedrouter engine | 14,000 | 1.20 | 12.0 | 16.20 | 1.90x | 0.48x | 1.54x | 1.49x | 0.28x | 1.17x |
| RabbitMQ->RabbitMQ | 256 B | 1 | fedrouter go-amqp | 9,394 | 4.36 | 43.6 | 20.36 | 1.28x | 1.73x | 1.03x | - | - | 0.78x |
| RabbitMQ->RabbitMQ | 256 B | 1 | Qpid Dispatch | 7,351 | 2.52 | 25.2 | 19.52 | - | - | - | - | - | - |
| RabbitMQ->RabbitMQ | 256 B | 1 | raw pipe | 9,100 | 3.60 | 36.0 | 18.60 | - | - | - | - | - | - |
| RabbitMQ->RabbitMQ | 256 B | 1 | shovel 0-9-1 | 12,000 | - | - | 14.00 | - | - | - | - | - | - |
| RabbitMQ->RabbitMQ | 256 B | 1 | shovel 1.0 | FAILED | FAILED | FAILED | FAILED | - | - | - | - | - | - |
| qpidd->qpidd | 256 B | 1 | fedrouter engine, ack 100 | FAILED | FAILED | FAILED | FAILED | - | - | - | - | - | - |
| qpidd->qpidd | 256 B | 1 | fedrouter engine | 90,000 | 0.90 | 9.0 | 2.90 | 0.91x | 0.87x | 3.75x | 2.38x | 0.33x | 0.70x |
| qpidd->qpidd | 256 B | 1 | fedrouter go-amqp | 37,801 | 2.72 | 27.2 | 5.92 | 0.38x | 2.62x | 1.58x | - | - | 0.29x |
| qpidd->qpidd | 256 B | 1 | Qpid Dispatch | 98,769 | 1.04 | 10.4 | 3.04 | - | - | - | - | - | - |
| qpidd->qpidd | 256 B | 1 | raw pipe | 24,000 | 3.50 | 35.0 | 6.50 | - | - | - | - | - | - |
| qpidd->qpidd | 256 B | 1 | qpidd federation | 128,280 | - | - | 1.40 | - | - | - | - | - | - |
`
	if got != want {
		t.Fatalf("table\n%s\nwant\n%s", got, want)
	}
}

func TestComparisonLeavesOutRatiosToForwardersNotRun(t *testing.T) {
	var rs []*result
	for _, r := range benchResults() {
		if r.Variant == vRaw || r.Variant == vEngine {
			rs = append(rs, r)
		}
	}
	summarize(rs)
	h, rows := comparison(rs, false)
	if got := strings.Join(h, "|"); got != "pair|size|routes|forwarder|msg/s|router CPU s/100k|router µs/msg|total CPU s/100k|/ raw pipe msg/s" {
		t.Fatalf("header %s", got)
	}
	if len(rows) != 4 || rows[0][3] != "fedrouter engine" || rows[0][4] != "14000" || rows[0][8] != "1.54x" {
		t.Fatalf("rows %q", rows)
	}
}

func TestEngineRatiosOnlyOnTheEngine(t *testing.T) {
	rs := benchResults()
	for _, r := range rs {
		engine := r.Variant == vEngine || r.Variant == vEngineAck
		if hasGo := r.VsGoAMQP != nil && r.CPUVsGoAMQP != nil; hasGo != (engine && len(r.Runs) > 0) {
			t.Errorf("%s: vs go-amqp %v, %v", r.caseSpec, r.VsGoAMQP, r.CPUVsGoAMQP)
		}
		if hasQdr := r.VsQdrouterd != nil; hasQdr != (isQueueRoute(r.Variant) && len(r.Runs) > 0) {
			t.Errorf("%s: vs Qpid Dispatch %v", r.caseSpec, r.VsQdrouterd)
		}
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
		"fedrouter engine ack 100 x1", "fedrouter engine, ack 100",
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
