package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/topology"
)

// A Control checks what it receives before it queues it: junk is counted
// by reason and reported in a bounded number of lines, with counts; the
// valid advertisement among it is queued, and copies of it coalesce.
func TestControlAdmit(t *testing.T) {
	var logs bytes.Buffer
	c := NewControl(nil, ControlOptions{RouterID: "r1", Inbox: 4, LogEvery: time.Hour, Log: zerolog.New(&logs)})
	c.SetSecret([]byte(controlSecret))
	now := time.Now()
	valid := signedLSA(t, "r2", 1, 1, "b")
	forged, err := topology.Encode(topology.LSA{Router: "r2", Instance: 1, Seq: 2, Time: now.UnixNano()}, []byte("not the secret"))
	if err != nil {
		t.Fatal(err)
	}
	junk := map[string][]byte{
		topology.ReasonMalformed:    []byte("junk"),
		topology.ReasonUnsigned:     bytes.Replace(valid, []byte(`"mac":"`), []byte(`"mac":"","x":"`), 1),
		topology.ReasonBadSignature: forged,
		topology.ReasonTooLarge:     make([]byte, topology.MaxLSASize+1),
	}
	for i := 0; i < 1000; i++ {
		for _, data := range junk {
			c.admit("b", data, now)
		}
		if i == 500 {
			c.admit("b", valid, now)
		}
	}
	c.admit("a", valid, now) // the same one through another broker
	for i := 0; i < 10; i++ {
		c.admit("b", signedLSA(t, fmt.Sprintf("other%d", i), 1, 1, "b"), now)
	}
	st := c.Stats()
	want := map[string]uint64{topology.ReasonMalformed: 1000, topology.ReasonUnsigned: 1000, topology.ReasonBadSignature: 1000,
		topology.ReasonTooLarge: 1000, topology.ReasonVersion: 0, DropCoalesced: 1, DropInboxFull: 7, DropOutboxFull: 0}
	if fmt.Sprint(st.Dropped) != fmt.Sprint(want) {
		t.Fatalf("dropped %v, want %v", st.Dropped, want)
	}
	in, ok := c.Take()
	if !ok || !bytes.Equal(in.Data, valid) || in.Broker != "b" {
		t.Fatalf("first taken: %q from %s (%v)", in.Data, in.Broker, ok)
	}
	c.ReportDrops(now.Add(2 * time.Hour))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	accounted := map[string]uint64{}
	for _, line := range lines {
		var e struct {
			Level, Reason string
			Dropped       uint64
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Level != "warn" {
			t.Fatalf("log line %q (%v)", line, err)
		}
		accounted[e.Reason] += max(e.Dropped, 1) // a first line stands for one drop
	}
	if len(lines) != 2*5 { // a first line and a summary for each reason
		t.Fatalf("%d log lines:\n%s", len(lines), logs.String())
	}
	for reason, n := range want {
		if reason != DropCoalesced && accounted[reason] != n {
			t.Errorf("%s: the log accounts for %d drops, the counter for %d", reason, accounted[reason], n)
		}
	}
}
