package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's runnable blocks, run as written: a ```yaml block whose first
// line is `# <file>` is written to that file, and each ```sh block of the
// section is run by sh -e in that directory, with bin/garra the binary
// under test and the README's loopback port swapped for a free one (so
// that tests running at once do not collide). Nothing leaves loopback.

// readmeText is the text of the README under heading, up to the next
// heading of the same level or above.
func readmeText(t *testing.T, readme, heading string) string {
	t.Helper()
	level := strings.Count(strings.Fields(heading)[0], "#")
	_, after, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	heading2 := regexp.MustCompile(`^#{1,` + fmt.Sprint(level) + `} `)
	inFence, n := false, 0
	for line := range strings.SplitAfterSeq(after, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if !inFence && heading2.MatchString(line) { // a YAML comment is no heading
			return after[:n]
		}
		n += len(line)
	}
	return after
}

// runnableBlocks are the files and scripts of a section: with files, the
// scripts that use one of them (a section may hold other examples).
func runnableBlocks(section string) (files map[string]string, scripts []string) {
	files = map[string]string{}
	fence := regexp.MustCompile("(?ms)^```(yaml|sh)\n(.*?)^```")
	for _, m := range fence.FindAllStringSubmatch(section, -1) {
		body := m[2]
		if m[1] == "yaml" {
			first, _, _ := strings.Cut(body, "\n")
			if name, ok := strings.CutPrefix(first, "# "); ok && !strings.Contains(name, " ") {
				files[name] = body
			}
			continue
		}
		scripts = append(scripts, body)
	}
	if len(files) > 0 {
		scripts = slices.DeleteFunc(scripts, func(sc string) bool {
			for name := range files {
				if strings.Contains(sc, name) {
					return false
				}
			}
			return true
		})
	}
	return files, scripts
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// runSection writes the section's files and runs its scripts in a fresh
// directory; it returns their stdout, or an error saying which failed.
// Whatever a script started in the background is killed at the end.
func runSection(t *testing.T, section string, env []string) (string, error) {
	t.Helper()
	files, scripts := runnableBlocks(section)
	if len(scripts) == 0 {
		return "", fmt.Errorf("no sh block to run")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(garraBin, filepath.Join(dir, "bin", "garra")); err != nil {
		t.Fatal(err)
	}
	port := strings.NewReplacer("127.0.0.1:3888", freeAddr(t))
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(port.Replace(body)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var stdout bytes.Buffer
	for i, script := range scripts {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, "sh", "-e", "-c", port.Replace(script))
		cmd.Dir, cmd.Env = dir, append(env, "PATH="+filepath.Dir(garraBin)+":"+os.Getenv("PATH"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// A background job keeps the output pipes open after sh exits.
		cmd.WaitDelay = time.Second
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &errb
		err := cmd.Start()
		if err == nil {
			pgid := cmd.Process.Pid
			err = cmd.Wait()
			if errors.Is(err, exec.ErrWaitDelay) {
				err = nil // sh itself exited 0
			}
			// The background gateway: SIGTERM, as a user's Ctrl-C would.
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
		}
		cancel()
		if err != nil {
			return stdout.String(), fmt.Errorf("sh block %d: %w\n%s\nstderr:\n%s", i, err, script, errb.String())
		}
	}
	return stdout.String(), nil
}

// quickStartAnswered checks that the quick start's curl got the
// orchestrator's tools: a JSON-RPC result listing garra_status.
func quickStartAnswered(stdout string) error {
	line := stdout[strings.LastIndex(strings.TrimSpace(stdout), "\n")+1:]
	var r struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return fmt.Errorf("the curl call's answer is not JSON-RPC (%w): %q", err, line)
	}
	for _, tl := range r.Result.Tools {
		if tl.Name == "garra_status" {
			return nil
		}
	}
	return fmt.Errorf("the curl call's answer lists no garra_status: %q", line)
}

// The gateway quick start as written: the config passes config check,
// the gateway starts, and curl with the exported token gets the tools.
func TestReadmeGatewayQuickStartRuns(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := runSection(t, readmeText(t, string(raw), "## The HTTP gateway"), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := quickStartAnswered(out); err != nil {
		t.Fatalf("%v\nstdout:\n%s", err, out)
	}
}

// A quick start as the README once had it: agent listed while allow_agent
// is false, and the tokens set for the gateway alone, so curl sends an
// empty bearer. The runner must fail on it, or the test above proves
// nothing.
func TestReadmeRunnerCatchesABrokenQuickStart(t *testing.T) {
	const broken = "```yaml\n# gateway.yml\ngateway:\n  listen: 127.0.0.1:3888\n  mcp_http:\n    enabled: true\n" +
		"    orchestrators:\n      - {name: n8n, key_env: N8N_MCP_KEY, tools: [status, agent]}\n```\n\n" +
		"```sh\nGARRAIA_GATEWAY_API_KEY=$(openssl rand -hex 32) N8N_MCP_KEY=$(openssl rand -hex 32) \\\n" +
		"  bin/garra gateway --config gateway.yml &\nuntil curl -sf http://127.0.0.1:3888/readyz >/dev/null; do sleep 0.2; done\n" +
		"curl -s http://127.0.0.1:3888/mcp -H \"Authorization: Bearer $N8N_MCP_KEY\" \\\n" +
		"  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n" +
		"  -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}'\n```\n"
	out, err := runSection(t, broken, testEnv(t))
	if err == nil {
		err = quickStartAnswered(out)
	}
	if err == nil {
		t.Fatalf("the broken quick start passed:\n%s", out)
	}
	t.Logf("refused as it should be: %v", err)
	// And with config check in front, as the README runs it, the check
	// stops it before the gateway starts.
	withCheck := strings.Replace(broken, "```sh\n", "```sh\nbin/garra config check --config gateway.yml\n", 1)
	if _, err := runSection(t, withCheck, testEnv(t)); err == nil || !strings.Contains(err.Error(), "the gateway refuses this config") {
		t.Fatalf("config check in the broken quick start: %v", err)
	}
}

// The stdio check by hand: its one line answers initialize with garra's
// serverInfo.
func TestReadmeStdioCheckRuns(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := runSection(t, readmeText(t, string(raw), "### Check it by hand"), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil || r.Result.ServerInfo.Name != "garra" {
		t.Fatalf("the check's answer: %v\n%s", err, out)
	}
}
