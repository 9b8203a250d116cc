package gateway

import (
	"testing"
	"time"
)

func TestWakeAttemptTimeout(t *testing.T) {
	for n, want := range []time.Duration{
		250 * time.Millisecond, 500 * time.Millisecond, time.Second,
		2 * time.Second, 2 * time.Second, 2 * time.Second,
	} {
		if got := wakeAttemptTimeout(n); got != want {
			t.Errorf("attempt %d: %s, want %s", n, got, want)
		}
	}
	if got := wakeAttemptTimeout(1 << 20); got != 2*time.Second {
		t.Errorf("a late attempt: %s, want the 2 s cap", got)
	}
}
