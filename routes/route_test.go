package routes

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A route retrying against a broker that fails the same way every time
// logs the failure once at warn; the repeats and the Connecting steps in
// between go to debug, and a new error or recovery is logged again.
func TestRouteLogsRepeatedFailuresOnce(t *testing.T) {
	var buf bytes.Buffer
	spec := Spec{Kind: KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "q"}
	r := &runState{name: spec.String(), log: zerolog.New(&buf).Level(zerolog.InfoLevel), state: StateWaiting}
	refused := errors.New("connection refused")
	for i := 0; i < 5; i++ {
		r.setState(StateConnecting, nil, 0)
		r.setState(StateWaiting, refused, time.Second)
	}
	r.setState(StateConnecting, nil, 0)
	r.setState(StateFailed, errors.New("exchange x not found"), time.Minute)
	r.setState(StateConnecting, nil, 0)
	r.setState(StateOperational, nil, 0)
	r.setState(StateWaiting, refused, time.Second)

	out := buf.String()
	if n := strings.Count(out, "connection refused"); n != 2 {
		t.Errorf("refusal logged %d times, want 2 (first, and again after recovery):\n%s", n, out)
	}
	if n := strings.Count(out, `"state":"Connecting"`); n != 1 {
		t.Errorf("Connecting logged %d times at info, want 1 (the first):\n%s", n, out)
	}
	for _, want := range []string{`"level":"error"`, "not found", `"state":"Operational"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}
