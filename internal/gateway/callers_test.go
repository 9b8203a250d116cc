package gateway_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An orchestrator's token may come from a file (key_file) instead of the
// environment; one whose token is unavailable, or named twice, is
// disabled, and nothing authenticates as it.
func TestOrchestratorTokensFromFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o400); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const tokA, tokC, tokD = "alpha-token-from-a-file-0123", "gamma-token-from-a-file-4567", "delta-token-from-env-89ab"
	yaml := enabled + `    orchestrators:
      - {name: alpha, key_file: ` + file("alpha", tokA+"\n") + `, tools: [status]}
      - {name: beta, key_file: ` + filepath.Join(dir, "missing") + `, tools: [status]}
      - {name: gamma, key_env: GAMMA_KEY, key_file: ` + file("gamma", tokC) + `, tools: [status]}
      - {name: delta, key_env: DELTA_KEY, tools: [status]}
`
	h := start(t, yaml, map[string]string{"GAMMA_KEY": tokC, "DELTA_KEY": tokD})
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"alpha from its file", tokA, http.StatusOK},
		{"delta from the environment", tokD, http.StatusOK},
		{"gamma names two sources", tokC, http.StatusUnauthorized},
	} {
		if code, body := post(t, h.url, tc.token, toolsList, nil); code != tc.want {
			t.Errorf("%s: status %d, want %d: %s", tc.name, code, tc.want, body)
		}
	}
	logs := h.logs.String()
	for _, want := range []string{
		`msg="orchestrator disabled: no token" orchestrator=beta error="key_file: open ` + filepath.Join(dir, "missing") + `: no such file or directory"`,
		`msg="orchestrator disabled: no token" orchestrator=gamma error="key_env and key_file are both set: set only one"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "disabled: no token\" orchestrator=alpha") || strings.Contains(logs, "disabled: no token\" orchestrator=delta") {
		t.Errorf("alpha disabled:\n%s", logs)
	}
	for _, tok := range []string{tokA, tokC, tokD} {
		if strings.Contains(logs, tok) {
			t.Errorf("a token reached the log")
		}
	}
}

// A token that proves two callers proves neither orchestrator: the owner
// keeps its key (and /sandboxz with it), and two orchestrators given one
// token are both disabled, where the later used to take it silently.
func TestSharedTokensDisableTheOrchestrators(t *testing.T) {
	const shared = "shared-token-0123456789"
	yaml := enabled + `    orchestrators:
      - {name: alpha, key_env: ALPHA, tools: [status]}
      - {name: beta, key_env: BETA, tools: [status]}
      - {name: mimic, key_env: MIMIC, tools: [status]}
      - {name: gamma, key_env: GAMMA, tools: [status]}
`
	h := start(t, yaml, map[string]string{"ALPHA": shared, "BETA": shared, "MIMIC": ownerKey, "GAMMA": "gamma-token-0123456789"})
	if code, body := post(t, h.url, shared, toolsList, nil); code != http.StatusUnauthorized {
		t.Errorf("the shared token: %d, want 401: %s", code, body)
	}
	if code, body := post(t, h.url, "gamma-token-0123456789", toolsList, nil); code != http.StatusOK {
		t.Errorf("gamma: %d: %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodGet, h.url+"/sandboxz", nil)
	req.Header.Set("Authorization", "Bearer "+ownerKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's key lost /sandboxz: %d", resp.StatusCode)
	}
	logs := h.logs.String()
	for _, name := range []string{"alpha", "beta", "mimic"} {
		if !strings.Contains(logs, `orchestrator=`+name) {
			t.Errorf("%s is not named disabled:\n%s", name, logs)
		}
	}
	if strings.Contains(logs, shared) || strings.Contains(logs, ownerKey) {
		t.Error("a token reached the log")
	}
}
