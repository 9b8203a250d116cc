//go:build unix

package gateway_test

import (
	"errors"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/garraia/garra/internal/gateway"
)

// /readyz answers within its own bound while a reload is stuck: here the
// config path became a FIFO nobody writes, so the reload waits in its read
// holding the reload lock for as long as the writer likes.
func TestReadyzAnswersWhileAReloadIsStuck(t *testing.T) {
	l := newLive(t, nil)
	good := "gateway:\n  api_key: " + ownerKey + "\n  mcp_http: {enabled: true}\nllm: {provider: ollama, model: llama3.2}\n"
	l.writeConfig(good)
	l.serve()

	if err := os.Remove(l.path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(l.path, 0o600); err != nil {
		t.Fatal(err)
	}
	reloaded := make(chan string, 1)
	go func() { reloaded <- l.gw.Reload() }()
	// Open the writer end once the reload has opened the reader end, and
	// hold it open without writing: the reload now waits in its read.
	var w *os.File
	for deadline := time.Now().Add(5 * time.Second); ; {
		f, err := os.OpenFile(l.path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			w = f
			break
		}
		if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			t.Fatalf("the reload never opened the config: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	defer func() {
		_, _ = w.WriteString(good)
		_ = w.Close()
		<-reloaded
	}()

	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(l.url + "/readyz")
	if err != nil {
		t.Fatalf("/readyz during a stuck reload: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(gateway.HeaderConfigHash) != hashOf([]byte(good)) {
		t.Fatalf("/readyz during a stuck reload: %d %v", resp.StatusCode, resp.Header)
	}
}
