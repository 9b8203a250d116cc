package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The gateway collects at gatewayGCPercent unless GOGC says otherwise,
// and /metrics shows the value in force.
func TestGatewayGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"default", nil, "go_gc_gogc_percent 400\n"},
		{"GOGC set", []string{"GOGC=150"}, "go_gc_gogc_percent 150\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yml")
			if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\ngateway:\n  listen: 127.0.0.1:0\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			addr, _ := startChild(t, dir, testEnv(t, tc.env...), gatewayListeningLine, "gateway", "--config", cfg)
			res, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if !strings.Contains(string(body), tc.want) {
				t.Fatalf("/metrics lacks %q", strings.TrimSpace(tc.want))
			}
		})
	}
}
