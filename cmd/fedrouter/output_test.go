package main

import (
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/api"
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
