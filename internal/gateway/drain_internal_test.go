package gateway

import (
	"testing"
	"time"
)

func TestDrainDeadlineBounds(t *testing.T) {
	for _, tt := range []struct {
		secs int
		want time.Duration
	}{
		{0, 30 * time.Second},
		{-5, time.Second},
		{1, time.Second},
		{45, 45 * time.Second},
		{900, 900 * time.Second},
		{100000, 900 * time.Second},
	} {
		if got := drainDeadline(tt.secs); got != tt.want {
			t.Errorf("drainDeadline(%d) = %v, want %v", tt.secs, got, tt.want)
		}
	}
}
