package pathpolicy

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	steps, err := Parse([]string{"hold 10m", "reject 1h", "dead-letter"})
	if err != nil || len(steps) != 3 || steps[0].For != 10*time.Minute || steps[2].Action != "dead-letter" {
		t.Fatalf("%+v %v", steps, err)
	}
	if steps, err := Parse([]string{"reroute", "hold 10m", "dead-letter"}); err != nil || len(steps) != 3 || steps[0].Action != "reroute" {
		t.Fatalf("reroute chain: %+v %v", steps, err)
	}
	for _, bad := range [][]string{{"hold", "reject"}, {"drop"}, {"hold soon"}, {"hold 1m", "reroute"}, {"reroute 1m"}, {"hold 1m 2m"}} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
