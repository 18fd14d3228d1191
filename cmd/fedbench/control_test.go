package main

import "testing"

func TestOperationalCount(t *testing.T) {
	m := []byte("# HELP fedrouter_routes Routes by state\n# TYPE fedrouter_routes gauge\n" +
		"fedrouter_routes{state=\"Connecting\"} 12\nfedrouter_routes{state=\"Operational\"} 9988\n" +
		"fedrouter_routes_in_flight{dest=\"rabbit2\",src=\"rabbit1\"} 0\n")
	if got := operationalCount(m); got != 9988 {
		t.Errorf("operationalCount = %d, want 9988", got)
	}
	if got := operationalCount([]byte("fedrouter_routes{state=\"Waiting\"} 3\n")); got != -1 {
		t.Errorf("without the series: %d, want -1", got)
	}
}
