package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/globaldest"
)

// The retry column counts down to the time the router gave, whatever
// delay it was chosen with, and Since is the age of the state.
func TestBrokerListCountsDown(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	b := api.BrokerStatus{Broker: "rome", State: "Waiting", Since: t0.Add(-3*time.Minute - 12*time.Second), Attempt: 4,
		RetryAt: t0.Add(12 * time.Second), RetryIn: "16s"}
	for _, c := range []struct {
		now        time.Time
		state, ago string
	}{
		{t0, "Waiting (attempt 4, retry in 12s)", "3m12s ago"},
		{t0.Add(4*time.Second + 300*time.Millisecond), "Waiting (attempt 4, retry in 8s)", "3m16s ago"},
		{t0.Add(11*time.Second + 900*time.Millisecond), "Waiting (attempt 4, retry in 1s)", "3m24s ago"},
		{t0.Add(12 * time.Second), "Waiting (attempt 4, retrying now)", "3m24s ago"},
		{t0.Add(20 * time.Second), "Waiting (attempt 4, retrying now)", "3m32s ago"},
	} {
		if got := brokerState(b, c.now); got != c.state {
			t.Errorf("at %s: state %q, want %q", c.now.Sub(t0), got, c.state)
		}
		if got := ago(b.Since, c.now); got != c.ago {
			t.Errorf("at %s: since %q, want %q", c.now.Sub(t0), got, c.ago)
		}
	}
	// A router that gives the delay only: shown as given.
	old := api.BrokerStatus{State: "Waiting", Attempt: 2, RetryIn: "4s"}
	if got := brokerState(old, t0); got != "Waiting (attempt 2, retry in 4s)" {
		t.Errorf("delay only: %q", got)
	}
	if got := brokerState(api.BrokerStatus{State: "Operational"}, t0); got != "Operational" {
		t.Errorf("operational: %q", got)
	}
	if got := ago(time.Time{}, t0); got != "-" {
		t.Errorf("no time: %q", got)
	}
	var out strings.Builder
	if err := printBrokers(&out, []api.BrokerStatus{b}, t0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Waiting (attempt 4, retry in 12s)  3m12s ago") {
		t.Errorf("broker list:\n%s", out.String())
	}
}

func TestSizeText(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1, "1 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
		{16 * 1024, "16 KiB"}, {1000000, "976.6 KiB"}, {1048575, "1 MiB"}, {1048576, "1 MiB"},
		{3 * 1024 * 1024 / 2, "1.5 MiB"}, {5 << 30, "5 GiB"}, {1 << 40, "1 TiB"},
		{math.MaxInt64, "8 EiB"}, {-2048, "-2 KiB"}, {-5, "-5 B"}, {math.MinInt64, "-8 EiB"},
	} {
		if got := sizeText(c.n); got != c.want {
			t.Errorf("sizeText(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// destination list prints a limited destination's sizes with units.
func TestDestinationLimitsInUnits(t *testing.T) {
	var out strings.Builder
	p := newPrinter(&out)
	printLimits(p, globaldest.Status{Name: "orders", Limits: &globaldest.LimitsView{
		Limits: "max_messages=10000 max_bytes=1572864 overflow=reject-publish", MaxMessages: 10000, MaxBytes: 1572864, Overflow: "reject-publish",
		Messages: 12, Bytes: 16384, Brokers: []globaldest.ShareView{{Broker: "r1", Messages: 12, Bytes: 16384, ShareMessages: 5000, ShareBytes: 786432}}}})
	if err := p.done(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"orders: limits max 10000 messages, max 1.5 MiB, overflow reject-publish; total 12 messages, 16 KiB;",
		"  r1: 12 messages of a share of 5000, 16 KiB of a share of 768 KiB\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("destination list lacks %q:\n%s", want, out.String())
		}
	}
	// From a router that gives the limits as text only.
	if got := limitsText(&globaldest.LimitsView{Limits: "max_messages=5 overflow=drop-head"}); got != "max_messages=5 overflow=drop-head" {
		t.Errorf("text only: %q", got)
	}
}
