package amqp

import (
	"testing"
	"time"
)

func TestBackoffDoublesToCap(t *testing.T) {
	b := Backoff{Min: 2 * time.Second, Max: 64 * time.Second, Jitter: 0.2, Rand: func() float64 { return 0 }}
	want := []time.Duration{2, 4, 8, 16, 32, 64, 64, 64}
	for i, w := range want {
		if got := b.Delay(i); got != w*time.Second {
			t.Errorf("Delay(%d) = %v, want %v", i, got, w*time.Second)
		}
	}
	if got := b.Delay(1000); got != 64*time.Second {
		t.Errorf("Delay(1000) = %v, want the cap", got)
	}
}

func TestBackoffJitterStaysWithinBounds(t *testing.T) {
	b := Backoff{Min: 2 * time.Second, Max: 64 * time.Second, Jitter: 0.2, Rand: func() float64 { return 0.999 }}
	for i := 0; i < 8; i++ {
		full := Backoff{Min: b.Min, Max: b.Max}.Delay(i)
		got := b.Delay(i)
		if got > full || got < time.Duration(float64(full)*0.8) {
			t.Errorf("Delay(%d) = %v, want within [0.8×%v, %v]", i, got, full, full)
		}
	}
	// With the real random source every delay stays under the cap.
	b.Rand = nil
	for i := 0; i < 100; i++ {
		if d := b.Delay(10); d > b.Max || d < 51*time.Second {
			t.Fatalf("Delay(10) = %v out of [51s, 64s]", d)
		}
	}
}
