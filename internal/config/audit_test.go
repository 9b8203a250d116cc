package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditDefaults(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := Load(writeFile(t, "data_dir: "+dir+"\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AuditPath() != filepath.Join(dir, "audit.jsonl") || cfg.Audit.MaxBytes != 10<<20 || cfg.Audit.MaxFiles != 5 {
		t.Fatalf("audit defaults: path %s %+v", cfg.AuditPath(), cfg.Audit)
	}
	// The default follows data_dir, even when data_dir changes after loading.
	cfg.DataDir = filepath.Join(dir, "other")
	if cfg.AuditPath() != filepath.Join(dir, "other", "audit.jsonl") {
		t.Fatalf("path %s", cfg.AuditPath())
	}
}

func TestAuditSection(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cfg, _, err := Load(writeFile(t, "audit:\n  path: ~/logs/garra.jsonl\n  max_bytes: 4096\n  max_files: 2\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AuditPath() != filepath.Join(home, "logs", "garra.jsonl") || cfg.Audit.MaxBytes != 4096 || cfg.Audit.MaxFiles != 2 {
		t.Fatalf("audit: path %s %+v", cfg.AuditPath(), cfg.Audit)
	}
	if _, _, err := Load(writeFile(t, "audit: {max_size: 1}\n"), envOf(nil)); err == nil || !strings.Contains(err.Error(), "max_size") {
		t.Fatalf("unknown audit key accepted: %v", err)
	}
}
