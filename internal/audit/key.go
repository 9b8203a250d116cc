package audit

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// loadKey reads the pseudonym key at path, creating it once (32 random
// bytes, mode 0600) when it does not exist. Creation goes through a
// temporary file and a hard link, so two processes sharing the directory
// (the stdio server and the gateway on one data_dir) never see a partial
// key and agree on one winner.
func loadKey(path string, random io.Reader) ([]byte, error) {
	key, err := readKey(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	if random == nil {
		random = rand.Reader
	}
	fresh := make([]byte, keySize)
	if _, err := io.ReadFull(random, fresh); err != nil {
		return nil, fmt.Errorf("generate audit key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".audit.key-*")
	if err != nil {
		return nil, fmt.Errorf("create audit key: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("create audit key: %w", err)
	}
	if _, err := tmp.Write(fresh); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("write audit key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("write audit key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write audit key: %w", err)
	}
	err = os.Link(tmp.Name(), path)
	if err != nil && !errors.Is(err, os.ErrExist) {
		// No hard links on this filesystem: create it exclusively instead
		// (a concurrent reader could then see it half-written, and would
		// report a short key rather than use it).
		err = writeExclusive(path, fresh)
	}
	if errors.Is(err, os.ErrExist) {
		return readKey(path) // another process won the race
	}
	if err != nil {
		return nil, fmt.Errorf("install audit key: %w", err)
	}
	return fresh, nil
}

func writeExclusive(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func readKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("read audit key: %w", err)
	}
	if len(b) != keySize {
		// Never replaced silently: a new key would break every pseudonym
		// already written. The operator decides.
		return nil, fmt.Errorf("audit key %s is %d bytes, want %d: move it away to start a new key", path, len(b), keySize)
	}
	return b, nil
}
