package gateway

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHostAllowed(t *testing.T) {
	allowed := []string{"team-a-gateway", "team-a-gateway.agents.svc"}
	for host, want := range map[string]bool{
		"127.0.0.1:3888": true, "localhost:3888": true, "[::1]:3888": true, "127.0.0.2": true, "LOCALHOST": true,
		"team-a-gateway:3888": true, "Team-A-Gateway.agents.svc.:3888": true,
		"evil.example.com": false, "team-a-gateway.evil.com": false, "10.0.0.5:3888": false, "": false, "0.0.0.0:3888": false,
	} {
		if got := HostAllowed(host, allowed); got != want {
			t.Errorf("HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestAcceptsBoth(t *testing.T) {
	for v, want := range map[string]bool{
		"application/json, text/event-stream": true, "*/*": true, "text/event-stream;q=0.9, application/json": true,
		"application/json": false, "text/event-stream": false, "": false, "text/html": false,
	} {
		if got := acceptsBoth([]string{v}); got != want {
			t.Errorf("acceptsBoth(%q) = %v", v, got)
		}
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestBudgetSlidingWindow(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	b := NewBudget(2, time.Minute, clock.now)
	if got := []bool{b.Take(), b.Take(), b.Take()}; !slices.Equal(got, []bool{true, true, false}) {
		t.Fatalf("takes = %v, want exactly 2", got)
	}
	clock.advance(30 * time.Second)
	if b.Take() {
		t.Fatal("window has not slid yet")
	}
	clock.advance(30 * time.Second)
	if b.Remaining() != 2 || !b.Take() {
		t.Fatal("window should have slid after 60s")
	}
	if NewBudget(0, time.Minute, clock.now).Limit() != 1 || NewBudget(-5, time.Minute, clock.now).Limit() != 1 {
		t.Fatal("a limit below 1 must be raised to 1")
	}
}

func TestBudgetExactUnderConcurrency(t *testing.T) {
	b := NewBudget(7, time.Minute, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.Take() {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if granted != 7 {
		t.Fatalf("granted %d, want 7", granted)
	}
}

func TestWorkspaceDir(t *testing.T) {
	a, b := WorkspaceDir("/data", "badgood"), WorkspaceDir("/data", "n8n")
	if a == b || !strings.HasPrefix(a, "/data/workspace/") || len(a) != len("/data/workspace/")+32 {
		t.Fatalf("WorkspaceDir: %s %s", a, b)
	}
	if strings.Contains(a, "badgood") {
		t.Fatal("the caller's name must not appear in the path")
	}
}

func TestBudgetTakeNIsAllOrNothing(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	b := NewBudget(5, time.Minute, clock.now)
	if !b.TakeN(3) || b.Remaining() != 2 {
		t.Fatalf("TakeN(3): remaining %d", b.Remaining())
	}
	if b.TakeN(3) || b.Remaining() != 2 {
		t.Fatalf("a TakeN that does not fit took something: remaining %d", b.Remaining())
	}
	if !b.TakeN(2) || b.TakeN(1) || !b.TakeN(0) || b.TakeN(-1) {
		t.Fatal("TakeN at the edge")
	}
	clock.advance(time.Minute)
	if !b.TakeN(5) {
		t.Fatal("the window slid; 5 must fit")
	}
}

func TestBatchLen(t *testing.T) {
	for _, tt := range []struct {
		body string
		want int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 1},
		{` [ {"id":1}, {"id":2}, {"method":"notifications/initialized"} ]`, 3},
		{"\n\t[{}]", 1},
		{`[]`, 1},
		{`[{"id":1},`, 1}, // malformed: the SDK answers 400
		{`not json`, 1},
		{``, 1},
	} {
		if got, _ := parseBody([]byte(tt.body)); got != tt.want {
			t.Errorf("batch of %q = %d, want %d", tt.body, got, tt.want)
		}
	}
}
