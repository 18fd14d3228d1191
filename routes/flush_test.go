package routes

import "testing"

// A flush's log line says how many routes went and what they had in
// flight.
func TestFlushLine(t *testing.T) {
	if got := flushLine(12, 30, "london"); got != "routes flushed: 12 deleted (to london); 30 messages were in flight (not yet settled at their sources)" {
		t.Errorf("flush line %q", got)
	}
	if got := flushLine(0, 0, ""); got != "routes flushed: 0 deleted; 0 messages were in flight (not yet settled at their sources)" {
		t.Errorf("flush line %q", got)
	}
}
