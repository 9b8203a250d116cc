package leader_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/garraia/garra/internal/leader"
	"github.com/garraia/garra/test/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// jobs records who runs the job when, and any moment two ran at once.
type jobs struct {
	mu      sync.Mutex
	active  int
	overlap bool
	running string
	starts  map[string]time.Time
	stops   map[string]time.Time
	changed chan struct{}
}

func newJobs() *jobs {
	return &jobs{starts: map[string]time.Time{}, stops: map[string]time.Time{}, changed: make(chan struct{}, 100)}
}

// job is the led function of replica name: it runs until its context
// ends, then takes stopDelay to stop, as a poll in flight would.
func (j *jobs) job(name string, stopDelay time.Duration) func(context.Context) {
	return func(ctx context.Context) {
		j.mu.Lock()
		j.active++
		if j.active > 1 {
			j.overlap = true
		}
		j.running = name
		j.starts[name] = time.Now()
		j.mu.Unlock()
		j.changed <- struct{}{}
		<-ctx.Done()
		time.Sleep(stopDelay)
		j.mu.Lock()
		j.active--
		j.running = ""
		j.stops[name] = time.Now()
		j.mu.Unlock()
		j.changed <- struct{}{}
	}
}

// waitRunning waits until some replica other than not runs the job.
func (j *jobs) waitRunning(t *testing.T, not string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		j.mu.Lock()
		r := j.running
		j.mu.Unlock()
		if r != "" && r != not {
			return r
		}
		select {
		case <-j.changed:
		case <-deadline:
			t.Fatalf("no replica other than %q took the job within %s", not, within)
		}
	}
}

func (j *jobs) noOverlap(t *testing.T) {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.overlap {
		t.Fatal("two replicas ran the job at once")
	}
}

type replica struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func start(e leader.Elector, fn func(context.Context)) *replica {
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); e.Lead(ctx, fn) }()
	return r
}

func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("Lead did not return after its context ended")
	}
}

// handover stops the leader of two replicas and returns how long until
// the other runs the job.
func handover(t *testing.T, j *jobs, reps map[string]*replica, within time.Duration) time.Duration {
	t.Helper()
	first := j.waitRunning(t, "", within)
	t0 := time.Now()
	reps[first].stop(t)
	j.mu.Lock()
	stopped := j.stops[first]
	j.mu.Unlock()
	if stopped.IsZero() || stopped.After(time.Now()) {
		t.Fatal("Lead returned before its job stopped")
	}
	second := j.waitRunning(t, first, within)
	took := time.Since(t0)
	j.mu.Lock()
	if !j.starts[second].After(stopped) {
		t.Fatalf("%s started at %v, before %s stopped at %v", second, j.starts[second], first, stopped)
	}
	j.mu.Unlock()
	j.noOverlap(t)
	return took
}
