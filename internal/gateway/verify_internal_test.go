package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/sandboxz"
	"github.com/garraia/garra/internal/toolchain"
	"github.com/garraia/garra/internal/tools"
)

func TestVerdictOf(t *testing.T) {
	at := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name     string
		n        int
		err      error
		verified bool
		reason   string
	}{
		{"tools listed", 5, nil, true, ""},
		{"no tools", 0, nil, false, sandboxz.NoTools},
		{"token refused", 0, fmt.Errorf("list tools: %w", tools.ErrRemoteUnauthorized), false, sandboxz.TokenRefused},
		{"timeout", 0, fmt.Errorf("list tools: %w", context.DeadlineExceeded), false, sandboxz.Unreachable},
		{"refused connection", 0, errors.New("dial tcp 10.0.0.1:8080: connection refused"), false, sandboxz.Unreachable},
		{"no token", 0, errors.Join(errNoSandboxToken, errors.New("SBX unset")), false, sandboxz.NoToken},
		{"hostile list", 0, fmt.Errorf("sandbox: list tools: %w: more than 32 pages", tools.ErrRemoteToolsTooLarge), false, sandboxz.NoTools},
	} {
		v := verdictOf(tc.n, tc.err, at)
		if v.Verified != tc.verified || v.Reason != tc.reason || v.Message == "" || !v.CheckedAt.Equal(at) {
			t.Errorf("%s: %+v", tc.name, v)
		}
	}
}

func TestWithToolchain(t *testing.T) {
	ok := sandboxz.Verdict{Verified: true, Tools: 6, Message: "ok"}
	v := withToolchain(ok, toolchain.Report{Tools: []toolchain.Tool{{Name: "bash"}, {Name: "make"}}, Required: []string{"make"}})
	if !v.Verified || len(v.Toolchain) != 2 || v.Toolchain[1] != "make" || v.Missing != nil {
		t.Errorf("all present: %+v", v)
	}
	v = withToolchain(ok, toolchain.Report{Tools: []toolchain.Tool{{Name: "bash"}}, Required: []string{"go", "make"}, Missing: []string{"go", "make"}})
	if v.Verified || v.Reason != sandboxz.MissingTools || v.Message != "required tools missing from the sandbox's PATH: go, make" {
		t.Errorf("missing: %+v", v)
	}
	v = withToolchain(ok, toolchain.Report{Missing: []string{"bad name; rm -rf /"}})
	if strings.Contains(v.Message, "rm -rf") {
		t.Errorf("an unsanitised name reached the verdict: %+v", v)
	}
}

func TestNextRound(t *testing.T) {
	ok, bad := sandboxz.Verdict{Verified: true}, sandboxz.Verdict{Reason: sandboxz.Unreachable}
	for _, tc := range []struct {
		name string
		in   map[string]sandboxz.Verdict
		want time.Duration
	}{
		{"no sandbox", nil, VerifyInterval},
		{"all verified", map[string]sandboxz.Verdict{"a": ok, "b": ok}, VerifyInterval},
		{"one not", map[string]sandboxz.Verdict{"a": ok, "b": bad}, verifyRetry},
	} {
		if got := nextRound(tc.in); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
