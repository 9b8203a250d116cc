package audit

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garraia/garra/test/testlog"
)

type syncBuffer = testlog.Buffer

func newLog(t *testing.T, o Options) (*Log, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	if o.Path == "" {
		o.Path = filepath.Join(t.TempDir(), "data", FileName)
	}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	l := New(o)
	t.Cleanup(func() { _ = l.Close() })
	return l, logs
}

// lines reads every JSON line of the file at p.
func lines(t *testing.T, p string) []map[string]any {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestLineShape(t *testing.T) {
	at := time.Date(2026, 5, 11, 12, 36, 40, 123456789, time.FixedZone("BRT", -3*3600))
	l, _ := newLog(t, Options{})
	l.Record(Record{Time: at, Surface: SurfaceHTTP, Caller: "n8n", Tool: "garra_read_history", Target: "telegram:111",
		Outcome: OutcomeRefused, Kind: "not_found", Latency: 1500 * time.Millisecond})
	l.Record(Record{Time: at, Surface: SurfaceStdio, Caller: "claude-code", Tool: "garra_ask", Outcome: OutcomeOK,
		Provider: "openrouter", Model: "z-ai/glm-5.3-flash", Latency: 42 * time.Millisecond})
	l.Record(Record{Time: at, Surface: SurfaceHTTP, Caller: "owner", Tool: "garra_ask", Outcome: OutcomeError, Kind: "timeout",
		Provider: "openrouter", Model: "z-ai/glm-5.3-flash", Latency: 60 * time.Second, KindOnly: true})
	l.Record(Record{Time: at, Surface: SurfaceHTTP, Caller: "owner", Tool: "garra_send_message", Target: "telegram:111", Outcome: OutcomeOK,
		DryRun: true, Latency: 2 * time.Millisecond})

	raw, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	p := l.Pseudonym("telegram:111")
	want := []string{
		`{"timestamp":"2026-05-11T15:36:40.123456789Z","surface":"http","caller":"n8n","tool":"garra_read_history","target":"` + p + `","outcome":"refused","error":{"kind":"not_found"},"latency_ms":1500}`,
		`{"timestamp":"2026-05-11T15:36:40.123456789Z","surface":"stdio","caller":"claude-code","tool":"garra_ask","outcome":"ok","provider":"openrouter","model":"z-ai/glm-5.3-flash","latency_ms":42}`,
		`{"timestamp":"2026-05-11T15:36:40.123456789Z","surface":"http","caller":"owner","tool":"garra_ask","outcome":"error","error":{"kind":"timeout"}}`,
		`{"timestamp":"2026-05-11T15:36:40.123456789Z","surface":"http","caller":"owner","tool":"garra_send_message","target":"` + p + `","outcome":"ok","dry_run":true,"latency_ms":2}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(p) != 16 || strings.Contains(string(raw), "telegram:111") {
		t.Fatalf("target not pseudonymized: %s", raw)
	}
}

func TestFileAndKeyModes(t *testing.T) {
	l, _ := newLog(t, Options{})
	l.Record(Record{Surface: SurfaceHTTP, Caller: "owner", Tool: "garra_status", Outcome: OutcomeOK})
	dir := filepath.Dir(l.Path())
	for _, p := range []string{l.Path(), filepath.Join(dir, KeyFileName)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", fi.Mode().Perm())
	}
	key, _ := os.ReadFile(filepath.Join(dir, KeyFileName))
	if len(key) != 32 {
		t.Fatalf("key is %d bytes", len(key))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".audit.key-*")); len(leftovers) != 0 {
		t.Fatalf("temporary key files left: %v", leftovers)
	}
}

func TestKeyCreatedOnceAndReused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	a, _ := newLog(t, Options{Path: p})
	a.Record(Record{Surface: SurfaceHTTP, Outcome: OutcomeOK})
	first := a.Pseudonym("telegram:111")
	_ = a.Close()
	// A second process (or a restart) on the same directory keeps the key,
	// so a conversation keeps its pseudonym.
	b, _ := newLog(t, Options{Path: p})
	b.Record(Record{Surface: SurfaceStdio, Outcome: OutcomeOK})
	if got := b.Pseudonym("telegram:111"); got != first || first == "" {
		t.Fatalf("pseudonym changed across restarts: %q then %q", first, got)
	}
	if b.Pseudonym("telegram:222") == first {
		t.Fatal("two conversations share a pseudonym")
	}
	// Another machine (another key) maps the same id elsewhere.
	c, _ := newLog(t, Options{})
	c.Record(Record{Surface: SurfaceStdio, Outcome: OutcomeOK})
	if c.Pseudonym("telegram:111") == first {
		t.Fatal("pseudonym does not depend on the key")
	}
}

func TestCorruptKeyIsNotReplaced(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, KeyFileName), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, logs := newLog(t, Options{Path: filepath.Join(dir, FileName)})
	l.Record(Record{Surface: SurfaceHTTP, Outcome: OutcomeOK})
	if !strings.Contains(logs.String(), "audit key") {
		t.Fatalf("no error for a corrupt key:\n%s", logs.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, KeyFileName)); string(b) != "short" {
		t.Fatal("the corrupt key was overwritten")
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		t.Fatal("a line was written without a usable key")
	}
}

func TestExistingWideFileIsNarrowed(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _ := newLog(t, Options{Path: p})
	l.Record(Record{Surface: SurfaceHTTP, Outcome: OutcomeOK})
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	if n := len(lines(t, p)); n != 2 {
		t.Fatalf("appended to the existing file? %d lines", n)
	}
}

func TestRotationBySize(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	l, _ := newLog(t, Options{Path: p, MaxBytes: 400, MaxFiles: 3})
	const total = 60
	for i := range total {
		l.Record(Record{Surface: SurfaceHTTP, Caller: "owner", Tool: "garra_status", Outcome: OutcomeOK, Latency: time.Duration(i) * time.Millisecond})
	}
	_ = l.Close()
	seen := map[float64]bool{}
	for _, name := range []string{p, p + ".1", p + ".2", p + ".3"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(name), err)
		}
		if fi.Size() > 400 {
			t.Errorf("%s is %d bytes, over max_bytes", filepath.Base(name), fi.Size())
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", filepath.Base(name), fi.Mode().Perm())
		}
		for _, m := range lines(t, name) {
			seen[m["latency_ms"].(float64)] = true
		}
	}
	if _, err := os.Stat(p + ".4"); err == nil {
		t.Fatal("kept more than max_files rotated copies")
	}
	// The newest lines survive; the oldest were dropped.
	if !seen[total-1] || seen[0] {
		t.Fatalf("kept %v", seen)
	}
	// The live file holds the newest lines, .1 the ones before.
	live, older := lines(t, p), lines(t, p+".1")
	if live[len(live)-1]["latency_ms"].(float64) != total-1 || older[len(older)-1]["latency_ms"].(float64) >= live[0]["latency_ms"].(float64) {
		t.Fatal("rotation order is wrong")
	}
}

func TestRotationDropsCopiesBeyondALowerMaxFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	for i := 1; i <= 6; i++ {
		if err := os.WriteFile(p+"."+strconv.Itoa(i), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, _ := newLog(t, Options{Path: p, MaxBytes: 200, MaxFiles: 2})
	for range 10 {
		l.Record(Record{Surface: SurfaceHTTP, Caller: "owner", Tool: "garra_status", Outcome: OutcomeOK})
	}
	for i := 3; i <= 6; i++ {
		if _, err := os.Stat(p + "." + strconv.Itoa(i)); err == nil {
			t.Errorf("%s.%d survived max_files: 2", FileName, i)
		}
	}
}

func TestConcurrentWritersNeverSplitALine(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	// Big enough that nothing is dropped, small enough to rotate often.
	l, _ := newLog(t, Options{Path: p, MaxBytes: 16 << 10, MaxFiles: 100})
	const writers, each = 16, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				l.Record(Record{Surface: SurfaceHTTP, Caller: "w" + strconv.Itoa(w), Tool: "garra_status",
					Target: "telegram:" + strconv.Itoa(i), Outcome: OutcomeOK, Latency: time.Duration(i) * time.Millisecond})
			}
		}()
	}
	wg.Wait()
	_ = l.Close()
	files, _ := filepath.Glob(p + "*")
	count := map[string]int{}
	total := 0
	for _, f := range files {
		for _, m := range lines(t, f) { // fails on any torn line
			count[m["caller"].(string)]++
			total++
		}
	}
	if total != writers*each {
		t.Fatalf("%d lines, want %d (files %d)", total, writers*each, len(files))
	}
	for w := range writers {
		if c := count["w"+strconv.Itoa(w)]; c != each {
			t.Fatalf("writer %d: %d lines", w, c)
		}
	}
	if len(files) < 3 {
		t.Fatalf("expected rotation under load, got %d files", len(files))
	}
}

func TestBrokenFileLogsOnceAndRecovers(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l, logs := newLog(t, Options{Path: filepath.Join(blocker, FileName)})
	for range 5 {
		l.Record(Record{Surface: SurfaceHTTP, Outcome: OutcomeOK}) // must not panic or block
	}
	if n := strings.Count(logs.String(), "audit file not written"); n != 1 {
		t.Fatalf("%d error lines, want exactly 1:\n%s", n, logs.String())
	}
	// The operator fixes the path: the next record is written and the
	// recovery is logged.
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	l.Record(Record{Surface: SurfaceHTTP, Outcome: OutcomeOK})
	if !strings.Contains(logs.String(), "audit file recovered") || len(lines(t, l.Path())) != 1 {
		t.Fatalf("no recovery:\n%s", logs.String())
	}
}

func TestNilLogIsANoOp(t *testing.T) {
	var l *Log
	l.Record(Record{Outcome: OutcomeOK})
	if l.Pseudonym("x") != "" || l.Path() != "" || l.Close() != nil {
		t.Fatal("nil Log did something")
	}
}

// Two processes (here: two Logs) creating the key at once agree on one.
func TestKeyCreationRaceHasOneWinner(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	logs := make([]*Log, n)
	var wg sync.WaitGroup
	for i := range n {
		logs[i], _ = newLog(t, Options{Path: filepath.Join(dir, FileName)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			logs[i].Record(Record{Surface: SurfaceHTTP, Outcome: OutcomeOK})
		}()
	}
	wg.Wait()
	want := logs[0].Pseudonym("telegram:1")
	for i, l := range logs {
		if got := l.Pseudonym("telegram:1"); got != want || got == "" {
			t.Fatalf("log %d uses another key: %q vs %q", i, got, want)
		}
	}
	if n := len(lines(t, filepath.Join(dir, FileName))); n != 8 {
		t.Fatalf("%d lines", n)
	}
}

// The identity a caller proved is written as given for a ServiceAccount
// and only as its pseudonym for an OIDC subject.
func TestIdentityFields(t *testing.T) {
	at := time.Date(2026, 5, 11, 12, 0, 0, 0, time.UTC)
	l, _ := newLog(t, Options{})
	l.Record(Record{Time: at, Surface: SurfaceHTTP, Caller: "n8n", Tool: "garra_status", Outcome: OutcomeOK,
		Auth: "serviceAccount", Identity: "system:serviceaccount:agents:n8n"})
	l.Record(Record{Time: at, Surface: SurfaceHTTP, Caller: "bot", Tool: "garra_status", Outcome: OutcomeOK,
		Auth: "oidc", Identity: "https://idp.example.com#alice@example.com", IdentityPersonal: true})
	raw, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	p := l.Pseudonym("https://idp.example.com#alice@example.com")
	want := []string{
		`{"timestamp":"2026-05-11T12:00:00Z","surface":"http","caller":"n8n","auth":"serviceAccount","identity":"system:serviceaccount:agents:n8n","tool":"garra_status","outcome":"ok","latency_ms":0}`,
		`{"timestamp":"2026-05-11T12:00:00Z","surface":"http","caller":"bot","auth":"oidc","identity":"` + p + `","tool":"garra_status","outcome":"ok","latency_ms":0}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(p) != 16 || strings.Contains(string(raw), "alice") {
		t.Fatalf("subject not pseudonymized: %s", raw)
	}
}
