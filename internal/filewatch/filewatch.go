// Package filewatch tells a long-running process that files it read at
// start have changed, so that it can load them again without a restart.
//
// The files are typically mounted from a ConfigMap or a Secret. The kubelet
// never rewrites such a file in place: it writes a new timestamped
// directory, points a `..data_tmp` symlink at it and renames that over
// `..data`, and every visible name is a symlink through `..data`. A watch
// on the file itself would follow the old target and go quiet when it is
// deleted; so the watch is on the directory that holds the names, where
// the swap shows up as a create of `..data`. A plain edit, an editor's
// write-and-rename and a new or removed token file show up there too.
//
// Events only say "look again": the caller re-reads what it depends on
// and decides whether anything differs (a hash of the contents), so a
// spurious or coalesced event costs one read. A periodic re-read covers
// the file systems where inotify says nothing.
package filewatch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Defaults of Options.
const (
	// DefaultDebounce gathers the several events of one kubelet update
	// (new directory, symlink, rename, removal) into one call.
	DefaultDebounce = 100 * time.Millisecond
	// DefaultResync is the fallback re-read period.
	DefaultResync = 30 * time.Second
)

// Options configure a Watcher.
type Options struct {
	// Paths are files or directories. A file is watched through its
	// directory; a directory is watched itself (its entries are the
	// files, e.g. one token per caller).
	Paths []string
	// Debounce is how long the directories must stay quiet after an
	// event before OnChange runs; 0 means DefaultDebounce.
	Debounce time.Duration
	// Resync runs OnChange this often even without an event; 0 means
	// DefaultResync, a negative value disables it.
	Resync time.Duration
	// Immediate runs OnChange once as soon as the watch is set up, for a
	// caller that restarts its watch (on a new set of paths) and must not
	// miss a change made in between.
	Immediate bool
	// Logger receives a warning when the watch cannot be set up (the
	// periodic re-read then carries on alone).
	Logger *slog.Logger
}

// Run calls onChange after the watched paths change, and every Resync,
// until ctx ends. Calls never overlap. It returns ctx's error; failing to
// set up inotify is logged, not returned, because the periodic re-read
// still works.
func Run(ctx context.Context, o Options, onChange func()) error {
	debounce := o.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	resync := o.Resync
	if resync == 0 {
		resync = DefaultResync
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	var events <-chan fsnotify.Event
	var errs <-chan error
	if w, err := watchDirs(o.Paths); err != nil {
		log.Warn("file watch unavailable; re-reading periodically only", "error", err, "every", resync)
	} else {
		defer func() { _ = w.Close() }()
		events, errs = w.Events, w.Errors
	}

	var tick <-chan time.Time
	if resync > 0 {
		t := time.NewTicker(resync)
		defer t.Stop()
		tick = t.C
	}
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	if o.Immediate {
		onChange()
	}

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			quiet.Reset(debounce)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflowed queue lost events: look again now.
			log.Warn("file watch error; re-reading", "error", err)
			quiet.Reset(debounce)
		case <-quiet.C:
			onChange()
		case <-tick:
			onChange()
		}
	}
}

// watchDirs watches the directory of every path (a directory path is its
// own directory), each once.
func watchDirs(paths []string) (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("new watcher: %w", err)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		dir := p
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			dir = filepath.Dir(p)
		}
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if err := w.Add(dir); err != nil {
			_ = w.Close()
			return nil, fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	return w, nil
}
