package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/config"
)

// Durations in the JSON log read as a person writes them, not as a float
// of milliseconds.
func TestLogDurationsReadable(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(config.LogSpec{Level: "info", Format: "json"}, &buf)
	log.Info().Dur("retry_in", 1200*time.Millisecond).Dur("over", 250*time.Millisecond).Msg("x")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	if line["retry_in"] != "1.2s" || line["over"] != "250ms" {
		t.Fatalf("durations logged as %v and %v, want 1.2s and 250ms: %s", line["retry_in"], line["over"], buf.Bytes())
	}
}
