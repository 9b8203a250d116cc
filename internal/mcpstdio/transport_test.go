package mcpstdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcpserver"
)

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// slowProvider answers after delay, or when the call is cancelled.
type slowProvider struct{ delay time.Duration }

func (p slowProvider) Kind() llm.Kind { return llm.KindOpenRouter }

func (p slowProvider) Complete(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	select {
	case <-time.After(p.delay):
		return &llm.Response{Text: "late answer"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// syncBuffer is an io.Writer safe for the server's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testServer(t *testing.T, delay time.Duration) *mcpserver.Options {
	t.Helper()
	core := &ask.Core{
		Config:      config.Default(),
		Getenv:      func(string) string { return "test-key" },
		NewProvider: func(llm.Options) (llm.Provider, error) { return slowProvider{delay}, nil },
	}
	return &mcpserver.Options{Version: "test", Caller: mcppolicy.LocalUser(), Ask: core}
}

// serve runs the server over in until it returns, and gives its stdout.
func serve(t *testing.T, o *mcpserver.Options, in io.Reader, limit int) (string, error) {
	t.Helper()
	out := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := mcpserver.New(*o).Run(ctx, &Transport{In: in, Out: out, MaxLineLength: limit})
	if ctx.Err() != nil {
		t.Fatalf("the server did not return after end of input:\n%s", out.String())
	}
	return out.String(), err
}

type reply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// replies parses stdout, failing on any line that is not one JSON-RPC
// message.
func replies(t *testing.T, stdout string) []reply {
	t.Helper()
	var out []reply
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var r reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.JSONRPC != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func byID(rs []reply) map[string]reply {
	m := map[string]reply{}
	for _, r := range rs {
		m[string(r.ID)] = r
	}
	return m
}

// The whole input is available and already at its end when the server
// starts: every request still gets its reply, a slow tool call included.
func TestTransportAnswersEverythingReadBeforeEOF(t *testing.T) {
	in := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"garra_ask","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/list"}`,
	}, "\n") // no final newline: the last line ends with the input
	start := time.Now()
	stdout, err := serve(t, testServer(t, 300*time.Millisecond), strings.NewReader(in), 0)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := byID(replies(t, stdout))
	if len(got) != 3 {
		t.Fatalf("%d replies, want 3:\n%s", len(got), stdout)
	}
	if r := got["1"]; !strings.Contains(string(r.Result), `"name":"garra"`) {
		t.Errorf("initialize reply: %s", r.Result)
	}
	if r := got["2"]; !strings.Contains(string(r.Result), `late answer`) {
		t.Errorf("tools/call reply: %s %+v", r.Result, r.Error)
	}
	if r := got[`"three"`]; !strings.Contains(string(r.Result), `garra_ask`) {
		t.Errorf("tools/list reply: %s", r.Result)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Error("the slow call cannot have run")
	}
}

// A malformed line is answered and the next one is served.
func TestTransportAnswersMalformedLinesAndKeepsServing(t *testing.T) {
	tests := []struct {
		name string
		line string
		id   string
		code int
	}{
		{"not JSON", `not json`, "null", -32700},
		{"truncated JSON", `{"jsonrpc":"2.0","id":9,"method":`, "null", -32700},
		{"two values on one line", `{"jsonrpc":"2.0","id":1,"method":"ping"} {"x":1}`, "null", -32700},
		{"JSON but no message", `{}`, "null", -32600},
		{"a bare number", `42`, "null", -32600},
		{"wrong version, id kept", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, "7", -32600},
		{"id of the wrong type", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", -32600},
		{"empty batch", `[]`, "null", -32600},
		{"batch with a bad member", `[{"jsonrpc":"2.0","id":5,"method":"ping"},{}]`, "null", -32600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.line + "\n\n   \n" + initLine + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"
			stdout, err := serve(t, testServer(t, 0), strings.NewReader(in), 0)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			rs := replies(t, stdout)
			if len(rs) != 3 {
				t.Fatalf("%d replies, want 3 (error, initialize, ping):\n%s", len(rs), stdout)
			}
			e := rs[0]
			if e.Error == nil || e.Error.Code != tt.code || string(e.ID) != tt.id || e.Result != nil {
				t.Fatalf("first reply %s, want error %d with id %s", stdout[:strings.IndexByte(stdout, '\n')], tt.code, tt.id)
			}
			if strings.Contains(e.Error.Message, tt.line) {
				t.Errorf("the error quotes the input: %q", e.Error.Message)
			}
			if string(rs[1].ID) != "1" || string(rs[2].ID) != "2" || rs[2].Error != nil {
				t.Fatalf("the server stopped serving after the bad line:\n%s", stdout)
			}
		})
	}
}

func TestTransportRefusesAnOverLongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 300) + `"}}`
	in := long + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n" + long // the last one ends with the input
	stdout, err := serve(t, testServer(t, 0), strings.NewReader(in), 200)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The filter's answers and the SDK's replies are written concurrently:
	// count them, do not rely on their order.
	var refused, served int
	for _, r := range replies(t, stdout) {
		switch {
		case r.Error != nil && r.Error.Code == -32600 && string(r.ID) == "null":
			refused++
		case string(r.ID) == "2" && r.Error == nil:
			served++
		}
	}
	if refused != 2 || served != 1 {
		t.Fatalf("replies:\n%s", stdout)
	}
	// A line at the limit passes.
	ok := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	if stdout, _ = serve(t, testServer(t, 0), strings.NewReader(ok), len(ok)); !strings.Contains(stdout, `"id":3,"result"`) {
		t.Fatalf("a line of exactly the limit was refused: %s", stdout)
	}
}

// A request the client cancelled is not waited for at end of input.
func TestTransportDoesNotWaitForCancelledRequests(t *testing.T) {
	in := initLine + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"garra_ask","arguments":{"message":"hi","timeout_secs":30}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}` + "\n"
	start := time.Now()
	if _, err := serve(t, testServer(t, time.Hour), strings.NewReader(in), 0); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("end of input waited %v for a cancelled call", d)
	}
}

// A request the client cancels while it runs gets no response (MCP: the
// receiver should not send one); the requests around it are answered.
func TestTransportSendsNoResponseToACancelledRequest(t *testing.T) {
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.New(*testServer(t, time.Hour)).Run(context.Background(), &Transport{In: inR, Out: out})
	}()
	waitFor := func(id string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), `"id":`+id+`,`) {
			if time.Now().After(deadline) {
				t.Fatalf("no reply to %s:\n%s", id, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	write := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(initLine)
	waitFor("1")
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"garra_ask","arguments":{"message":"hi","timeout_secs":30}}}`)
	time.Sleep(100 * time.Millisecond) // the call is running
	write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`)
	write(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	waitFor("3")
	time.Sleep(300 * time.Millisecond) // room for the reply that must not come
	_ = inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r, ok := byID(replies(t, out.String()))["2"]; ok {
		t.Fatalf("the cancelled request got a response: %+v", r)
	}
}

// failingWriter breaks after the first write, like a stdout whose reader
// went away.
type failingWriter struct {
	mu sync.Mutex
	n  int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if w.n > 1 {
		return 0, errors.New("broken pipe")
	}
	return len(p), nil
}

// With stdout gone no reply can come: end of input is not held back.
func TestTransportStopsWaitingWhenStdoutBreaks(t *testing.T) {
	var lines []string
	lines = append(lines, initLine)
	for i := 2; i < 6; i++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"garra_ask","arguments":{"message":"hi"}}}`, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = mcpserver.New(*testServer(t, 50*time.Millisecond)).Run(ctx, &Transport{In: strings.NewReader(strings.Join(lines, "\n")), Out: &failingWriter{}})
	if ctx.Err() != nil {
		t.Fatal("the server hung after its stdout broke")
	}
}

// Replies and error answers never share a line, even when both are written
// at once.
func TestTransportLinesNeverInterleave(t *testing.T) {
	var b strings.Builder
	b.WriteString(initLine + "\n")
	for i := range 200 {
		if i%2 == 0 {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i+10)
		} else {
			b.WriteString("garbage\n")
		}
	}
	stdout, err := serve(t, testServer(t, 0), strings.NewReader(b.String()), 0)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rs := replies(t, stdout)
	var errs, lists int
	for _, r := range rs {
		switch {
		case r.Error != nil && r.Error.Code == -32700:
			errs++
		case string(r.ID) != "1" && strings.Contains(string(r.Result), `"name":"garra_ask"`):
			lists++
		}
	}
	if errs != 100 || lists != 100 {
		t.Fatalf("%d parse errors and %d tools/list replies, want 100 and 100", errs, lists)
	}
}

// Every stdio-only row of the error table is what the transport answers.
func TestErrorTableStdioRowsMatchTheTransport(t *testing.T) {
	lines := map[int]string{-32700: "{not json", -32600: `{"jsonrpc":"2.0","id":true,"method":"ping"}`}
	for _, row := range errkinds.StdioJSONRPC {
		line, ok := lines[row.Code]
		if !ok {
			t.Errorf("row %d: no input here produces it", row.Code)
			continue
		}
		stdout, err := serve(t, testServer(t, 0), strings.NewReader(line+"\n"), 0)
		if err != nil {
			t.Fatal(err)
		}
		rs := replies(t, stdout)
		prefix := strings.TrimSuffix(row.Message, "…")
		if len(rs) != 1 || rs[0].Error == nil || rs[0].Error.Code != row.Code || !strings.HasPrefix(rs[0].Error.Message, prefix) {
			t.Errorf("row %d %q: got %s", row.Code, row.Message, stdout)
		}
	}
}

// A call before initialize is an invalid request with its code, not the
// SDK's codeless error (code 0 on the wire), and the session goes on.
func TestTransportCallBeforeInitialize(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}` + "\n" + strings.Replace(initLine, `"id":1`, `"id":2`, 1) + "\n"
	stdout, err := serve(t, testServer(t, 0), strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	rs := byID(replies(t, stdout))
	if r := rs["1"]; r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "send initialize first") {
		t.Fatalf("tools/list before initialize: %s", stdout)
	}
	if r := rs["2"]; r.Error != nil || len(r.Result) == 0 {
		t.Fatalf("initialize after it: %s", stdout)
	}
}
