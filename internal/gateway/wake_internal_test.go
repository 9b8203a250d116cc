package gateway

import (
	"context"
	"errors"
	"sync"
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

// A call in flight keeps its sandbox marked: no two marks (the call's own
// first one included) further apart than 1.5 × every, nothing marked after
// release, and the end of the call marked when the last mark is old.
func TestHoldKeepsTheMarkFresh(t *testing.T) {
	const every = 100 * time.Millisecond
	ws := wakes{every: every}
	var mu sync.Mutex
	var marks []time.Time
	mark := func(_ context.Context, at time.Time) error {
		mu.Lock()
		defer mu.Unlock()
		marks = append(marks, at)
		return nil
	}
	start := time.Now()
	if !ws.due("k", start) {
		t.Fatal("a first mark is due")
	}
	release := ws.hold(context.Background(), "k", time.Now, mark)
	time.Sleep(time.Second)
	release()
	end := time.Now()

	mu.Lock()
	got := append([]time.Time{start}, marks...)
	mu.Unlock()
	if len(got) < 5 {
		t.Fatalf("%d marks in 1 s with every %s", len(got), every)
	}
	// Scheduling on a loaded machine may delay a tick; a gap of 4 × every
	// still tells a held mark from one made once per call.
	for i := 1; i < len(got); i++ {
		if gap := got[i].Sub(got[i-1]); gap > 4*every {
			t.Errorf("marks %d and %d are %s apart", i-1, i, gap)
		}
	}
	if last := got[len(got)-1]; end.Sub(last) > 4*every {
		t.Errorf("the call ended %s after its last mark", end.Sub(last))
	}
	time.Sleep(3 * every)
	mu.Lock()
	after := len(marks)
	mu.Unlock()
	if after != len(got)-1 {
		t.Errorf("%d marks after release", after-(len(got)-1))
	}
}

// A failed mark is not throttled: the next call (or round) marks again at
// once; a successful one is.
func TestHoldLeavesAFailedMarkDue(t *testing.T) {
	for _, fail := range []bool{true, false} {
		ws := wakes{every: time.Hour}
		mark := func(context.Context, time.Time) error {
			if fail {
				return errors.New("patch refused")
			}
			return nil
		}
		// An hour between rounds: only release marks.
		ws.hold(context.Background(), "k", time.Now, mark)()
		if due := ws.due("k", time.Now()); due != fail {
			t.Errorf("mark failing %v: due right after = %v", fail, due)
		}
	}
}
