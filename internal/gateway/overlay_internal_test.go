package gateway

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/kube"
)

// A reload reads a secret file from the watched Secret when that Secret is
// live and the file is directly in the directory it is mounted on, and
// from disk otherwise; a key the live Secret lacks is missing, whatever
// the (older) file says. The values get the file's checks.
func TestOverlayReader(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	owner := filepath.Join(dir, "owner")
	for _, d := range []string{tokens, owner} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, v string) {
		if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tokens, "alpha"), "alpha-from-file\n")
	write(filepath.Join(tokens, "gone"), "removed-from-the-secret\n")
	write(filepath.Join(owner, "api-key"), "owner-from-file\n")
	live := overlay{secretDir: tokens + "/", secretName: "ns/team-a-gateway-tokens", secret: map[string][]byte{
		"alpha": []byte("alpha-new\nalpha-old\n"),
		"blank": []byte(" \n"),
		"big":   []byte(strings.Repeat("x", 5<<10)),
	}}
	for _, tc := range []struct {
		name    string
		o       overlay
		path    string
		want    string
		wantErr string
	}{
		{"not live: the file", overlay{secretDir: tokens}, filepath.Join(tokens, "alpha"), "alpha-from-file", ""},
		{"live: the Secret's key", live, filepath.Join(tokens, "alpha"), "alpha-new\nalpha-old", ""},
		{"live, a path spelled otherwise", live, tokens + "/./alpha", "alpha-new\nalpha-old", ""},
		{"live: a key it lacks is missing, not the older file", live, filepath.Join(tokens, "gone"), "", "holds no key gone"},
		{"live: outside its directory, the file", live, filepath.Join(owner, "api-key"), "owner-from-file", ""},
		{"live: below its directory is not one of its keys", live, filepath.Join(tokens, "sub", "alpha"), "", "no such file"},
		{"live: an empty value", live, filepath.Join(tokens, "blank"), "", "is empty"},
		{"live: a value over the bound", live, filepath.Join(tokens, "big"), "", "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.o.reader()(tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("read %s = %q, %v; want an error with %q", tc.path, got, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "alpha-new") || strings.Contains(err.Error(), "removed-from") {
					t.Fatalf("the error holds a token: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("read %s = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		})
	}
}

// The config file comes from the ConfigMap while it is live, else from
// disk.
func TestOverlayConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte("from: file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    overlay
		want string
	}{
		{overlay{}, "from: file\n"},
		{overlay{config: []byte("from: watch\n")}, "from: watch\n"},
	} {
		got, err := tc.o.readConfig(path)
		if err != nil || string(got) != tc.want {
			t.Errorf("readConfig = %q, %v; want %q", got, err, tc.want)
		}
	}
}

// What each watch state makes of its half of the overlay: data when live
// and present, the files (nil) when lost, absent, or without the key.
func TestFromWatch(t *testing.T) {
	lost := errors.New("connection refused")
	cm := json.RawMessage(`{"metadata":{"name":"g","resourceVersion":"7"},"data":{"config.yml":"a: 1\n"}}`)
	for _, tc := range []struct {
		name string
		s    kube.WatchState
		want string // "" = nil
		live bool
	}{
		{"present", kube.WatchState{Raw: cm}, "a: 1\n", true},
		{"lost", kube.WatchState{Err: lost}, "", false},
		{"absent", kube.WatchState{}, "", false},
		{"no such key", kube.WatchState{Raw: json.RawMessage(`{"metadata":{"name":"g"},"data":{"other":"x"}}`)}, "", false},
	} {
		got, live, _ := configFromWatch(tc.s, "config.yml")
		if string(got) != tc.want || (got == nil) != (tc.want == "") || live != tc.live {
			t.Errorf("config %s: %q live %t; want %q live %t", tc.name, got, live, tc.want, tc.live)
		}
	}
	for _, tc := range []struct {
		name string
		s    kube.WatchState
		keys int // -1 = nil
	}{
		{"present", kube.WatchState{Raw: json.RawMessage(`{"metadata":{"name":"t"},"data":{"a":"YWxwaGE="}}`)}, 1},
		{"present, empty: live, no key", kube.WatchState{Raw: json.RawMessage(`{"metadata":{"name":"t"}}`)}, 0},
		{"lost", kube.WatchState{Err: lost}, -1},
		{"absent", kube.WatchState{}, -1},
	} {
		got, live, _ := secretFromWatch(tc.s)
		if (got == nil) != (tc.keys < 0) || (got != nil && len(got) != tc.keys) || live != (tc.keys >= 0) {
			t.Errorf("secret %s: %v live %t; want %d keys", tc.name, got, live, tc.keys)
		}
		if tc.keys == 1 && string(got["a"]) != "alpha" {
			t.Errorf("secret %s: a = %q, want the decoded value", tc.name, got["a"])
		}
	}
}
