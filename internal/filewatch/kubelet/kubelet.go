// Package kubelet lays files out in a directory exactly as the kubelet
// updates a mounted ConfigMap or Secret volume, for tests of the
// processes that must notice such an update.
package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Volume is one mounted volume: each visible name is a symlink through
// ..data, which points at a timestamped directory holding the files.
type Volume struct {
	Dir string
	mu  sync.Mutex
	gen int
}

// Publish replaces the volume's content with files as one update, in the
// kubelet's order: new timestamped directory, ..data_tmp symlink to it,
// rename over ..data, symlinks for new names, removal of the old
// directory. A name no longer in files keeps a dangling link, as the
// kubelet leaves it until it prunes.
func (v *Volume) Publish(files map[string]string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gen++
	ts := fmt.Sprintf("..2026_12_04_00_00_%02d.%09d", v.gen%60, v.gen)
	if err := os.Mkdir(filepath.Join(v.Dir, ts), 0o700); err != nil {
		return err
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(v.Dir, ts, name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	old, _ := os.Readlink(filepath.Join(v.Dir, "..data"))
	if err := os.Symlink(ts, filepath.Join(v.Dir, "..data_tmp")); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(v.Dir, "..data_tmp"), filepath.Join(v.Dir, "..data")); err != nil {
		return err
	}
	for name := range files {
		link := filepath.Join(v.Dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				return err
			}
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(v.Dir, old))
	}
	return nil
}
