package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

func TestAskCommand(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "four"}, llmdouble.Step{Text: "five"},
		// Three times: the CLI retries a 500 twice before giving up.
		llmdouble.Step{Status: 500, ErrorMessage: "upstream down"}, llmdouble.Step{Status: 500, ErrorMessage: "upstream down"}, llmdouble.Step{Status: 500, ErrorMessage: "upstream down"})
	cfg := writeConfig(t, "anthropic", double.URL())
	env := testEnv(t, "ANTHROPIC_API_KEY=sk-ant-api03-test-key-000000000000000000000000")

	out, _, code := run(t, env, "ask", "--config", cfg, "--provider", "anthropic", "--model", "claude-x", "2+2?")
	if code != 0 || out != "four\n" {
		t.Fatalf("exit %d out %q", code, out)
	}

	out, _, code = run(t, env, "ask", "--config", cfg, "--provider", "anthropic", "--json", "--system", "be terse", "2+3?")
	var envl map[string]any
	if err := json.Unmarshal([]byte(out), &envl); err != nil || code != 0 {
		t.Fatalf("exit %d out %q err %v", code, out, err)
	}
	if envl["schema"] != "garra.ask.v1" || envl["answer"] != "five" || envl["provider"] != "anthropic" || envl["model"] != "z-ai/glm-5.3-flash" {
		t.Fatalf("envelope %v", envl)
	}
	if reqs := double.Requests(); reqs[1].System != "be terse" || reqs[1].Model != "z-ai/glm-5.3-flash" {
		t.Fatalf("second request %+v", reqs[1])
	}

	out, errOut, code := run(t, env, "ask", "--config", cfg, "--provider", "anthropic", "--json", "fail please")
	if code != 1 || !strings.Contains(out, `"kind":"provider_error"`) || !strings.Contains(errOut, "provider_error") {
		t.Fatalf("exit %d out %q err %q", code, out, errOut)
	}
}

func TestAskUsageErrors(t *testing.T) {
	env := testEnv(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no message", []string{"ask"}, "MESSAGE"},
		{"blank message", []string{"ask", "   "}, "MESSAGE"},
		{"timeout zero", []string{"ask", "--timeout", "0", "hi"}, "--timeout"},
		{"timeout too large", []string{"ask", "--timeout", "601", "hi"}, "--timeout"},
		{"timeout not a number", []string{"ask", "--timeout", "soon", "hi"}, "timeout"},
		{"unknown provider", []string{"ask", "--provider", "gemini", "hi"}, "--provider"},
		{"unknown flag", []string{"ask", "--temperature", "1", "hi"}, "temperature"},
		{"system too long", []string{"ask", "--system", strings.Repeat("x", 8193), "hi"}, "--system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := run(t, env, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 naming %q", code, errOut, tt.want)
			}
		})
	}
}

func TestAskMissingExplicitConfig(t *testing.T) {
	_, errOut, code := run(t, testEnv(t), "ask", "--config", "/nonexistent/garra.yml", "hi")
	if code != 1 || !strings.Contains(errOut, "/nonexistent/garra.yml") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, testEnv(t), "version")
	if code != 0 || !strings.HasPrefix(out, "garra ") || !strings.Contains(out, "go1.") {
		t.Fatalf("exit %d out %q", code, out)
	}
}
