package main

import (
	"bytes"
	"encoding/json"
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
		res("RabbitMQ->RabbitMQ", vQdrouterd, 7351, 2.52, 17),
		res("RabbitMQ->RabbitMQ", vShovel091, 12000, 0, 14),
		res("RabbitMQ->RabbitMQ", vShovel10, 0, 0, 0),
		res("qpidd->qpidd", vRaw, 24000, 3.5, 3),
		res("qpidd->qpidd", vQdrouterd, 98769, 1.04, 2),
		res("qpidd->qpidd", vQpidFed, 128280, 0, 1.4),
		res("RabbitMQ->RabbitMQ", vEngine, 14000, 1.2, 15),
		res("RabbitMQ->RabbitMQ", vEngineAck, 16000, 0.9, 12),
		res("qpidd->qpidd", vEngine, 90000, 0.9, 2),
		res("qpidd->qpidd", vEngineAck, 0, 0, 0),
	}
	rs[3].Errors = []string{"shovel terminated"}
	rs[3].Retried = []string{"round 1: shovel terminated"}
	rs[1].Retried = []string{"round 1: setup: 500 internal error"}
	rs[10].Errors = []string{"route r1 is not on the engine data path"}
	summarize(rs)
	return rs
}

// The figures of benchResults worked out by hand: e.g. RabbitMQ's engine
// with ack, 16,000 msg/s on 0.9 s per 100,000 messages, against Qpid
// Dispatch's 7,351 on 2.52 (2.18x, 0.36x), the raw pipe's 9,100 (1.76x),
// the best shovel's 12,000 (1.33x; the 1.0 shovel failed).
func TestComparisonPutsEachForwarderSideBySide(t *testing.T) {
	h, rows := comparison(benchResults(), true)
	got := markdownRows(h, rows, cmpTextCols)
	want := `| pair | size | routes | forwarder | msg/s | router CPU s/100k | router µs/msg | total CPU s/100k | / Qpid Dispatch msg/s | / Qpid Dispatch CPU | / raw pipe msg/s | / native msg/s |
|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
| RabbitMQ->RabbitMQ | 256 B | 1 | fedrouter engine, ack 100 | 16,000 | 0.90 | 9.0 | 12.90 | 2.18x | 0.36x | 1.76x | 1.33x |
| RabbitMQ->RabbitMQ | 256 B | 1 | fedrouter engine | 14,000 | 1.20 | 12.0 | 16.20 | 1.90x | 0.48x | 1.54x | 1.17x |
| RabbitMQ->RabbitMQ | 256 B | 1 | Qpid Dispatch | 7,351 | 2.52 | 25.2 | 19.52 | - | - | - | - |
| RabbitMQ->RabbitMQ | 256 B | 1 | raw pipe | 9,100 | 3.60 | 36.0 | 18.60 | - | - | - | - |
| RabbitMQ->RabbitMQ | 256 B | 1 | shovel 0-9-1 | 12,000 | - | - | 14.00 | - | - | - | - |
| RabbitMQ->RabbitMQ | 256 B | 1 | shovel 1.0 | FAILED | FAILED | FAILED | FAILED | - | - | - | - |
| qpidd->qpidd | 256 B | 1 | fedrouter engine, ack 100 | FAILED | FAILED | FAILED | FAILED | - | - | - | - |
| qpidd->qpidd | 256 B | 1 | fedrouter engine | 90,000 | 0.90 | 9.0 | 2.90 | 0.91x | 0.87x | 3.75x | 0.70x |
| qpidd->qpidd | 256 B | 1 | Qpid Dispatch | 98,769 | 1.04 | 10.4 | 3.04 | - | - | - | - |
| qpidd->qpidd | 256 B | 1 | raw pipe | 24,000 | 3.50 | 35.0 | 6.50 | - | - | - | - |
| qpidd->qpidd | 256 B | 1 | qpidd federation | 128,280 | - | - | 1.40 | - | - | - | - |
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

func TestQdrouterdRatiosOnlyOnTheQueueRoutes(t *testing.T) {
	rs := benchResults()
	for _, r := range rs {
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
		"1/1 (1 retried)", "0/1 (1 retried)", "side by side", "14000", "0.91x",
		"fedrouter engine ack 100 x1", "fedrouter engine, ack 100",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	if r.failures() == nil {
		t.Error("a case that failed twice: the bench must fail")
	}
	r.Results = r.Results[:3] // without it: the retried case alone fails nothing
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

// A results file from before 2026-12-05 holds fedrouter on go-amqp
// (variant "fedrouter") and the engine's ratios over it: fedbench table
// shows its row as measured, and no column of ratios over it.
func TestComparisonOfAResultsFileFromBeforeGoAMQPWasRemoved(t *testing.T) {
	old := `{"results": [
		{"pair": "R", "size_bytes": 256, "variant": "fedrouter", "routes": 1, "messages": 1000, "runs": [{"msgs_per_s": 9000, "verified": "ok"}],
		 "msgs_per_s": 9000, "process_cpu_s_per_100k": 4, "broker_cpu_s_per_100k": 16, "fedrouter_vs_raw": 0.9},
		{"pair": "R", "size_bytes": 256, "variant": "fedrouter engine", "routes": 1, "messages": 1000, "runs": [{"msgs_per_s": 15000, "verified": "ok"}],
		 "msgs_per_s": 15000, "process_cpu_s_per_100k": 1, "broker_cpu_s_per_100k": 15, "fedrouter_vs_raw": 1.5, "engine_vs_go_amqp": 1.67},
		{"pair": "R", "size_bytes": 256, "variant": "raw pipe", "routes": 1, "messages": 1000, "runs": [{"msgs_per_s": 10000, "verified": "ok"}],
		 "msgs_per_s": 10000, "process_cpu_s_per_100k": 3, "broker_cpu_s_per_100k": 15}]}`
	var r report
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	h, rows := comparison(r.Results, true)
	got := markdownRows(h, rows, cmpTextCols)
	want := `| pair | size | routes | forwarder | msg/s | router CPU s/100k | router µs/msg | total CPU s/100k | / raw pipe msg/s |
|---|---|---|---|---:|---:|---:|---:|---:|
| R | 256 B | 1 | fedrouter engine | 15,000 | 1.00 | 10.0 | 16.00 | 1.50x |
| R | 256 B | 1 | fedrouter go-amqp | 9,000 | 4.00 | 40.0 | 20.00 | 0.90x |
| R | 256 B | 1 | raw pipe | 10,000 | 3.00 | 30.0 | 18.00 | - |
`
	if got != want {
		t.Fatalf("table\n%s\nwant\n%s", got, want)
	}
}
