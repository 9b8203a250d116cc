package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/garraia/garra/internal/kube"
)

// PolicyWatch names the objects a gateway in the cluster learns its policy
// from through the API server: the ConfigMap its config file is mounted
// from and the Secret its token files are mounted from. Watching them
// applies a change as soon as the API server has it, instead of when the
// kubelet next rewrites the mounted files (a minute or more); the files
// stay the fallback when the API server cannot be reached.
type PolicyWatch struct {
	Client    *kube.Client
	Namespace string
	// ConfigMap holds the config file under the key of its file name
	// (Options.ConfigPath's base name), as the volume mounts it.
	ConfigMap string
	// Secret holds the token files, each under the key of its file name;
	// SecretDir is the directory it is mounted on.
	Secret    string
	SecretDir string
	// Options tunes both watches (tests shorten the backoff); the
	// resource, namespace and name are set here.
	Options kube.WatchOptions
}

// watched holds the two halves of the overlay, each set by its watch.
type watched struct {
	mu sync.Mutex
	o  overlay
	// live says which watch last listed successfully, for the log lines
	// on a change of state.
	configLive, secretLive bool
	// configKept and secretKept are set while a lost watch's last data
	// stays the source: the digest of the mounted files when the watch
	// was lost. The kubelet writes the files a sync period after the API
	// server has a change, so at that moment they may still be older
	// than what the watch delivered; they become the source again once
	// they change (keptRelease).
	configKept, secretKept []byte
}

func (w *watched) get() overlay {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.o
}

// watchPolicy runs both watches until ctx ends. Every state either
// reports becomes the overlay at once and is reloaded: no debounce, the
// API server sends one event per write.
func (g *Gateway) watchPolicy(ctx context.Context, pw *PolicyWatch) {
	var wg sync.WaitGroup
	key := filepath.Base(g.configPath)
	secretName := pw.Namespace + "/" + pw.Secret
	g.watched.mu.Lock()
	g.watched.o.secretDir, g.watched.o.secretName = pw.SecretDir, secretName
	g.watched.mu.Unlock()
	// apply returns whether the overlay may have changed: a failure
	// retried while the files are already the source changes nothing and
	// is not worth a reload.
	run := func(resource, name string, apply func(kube.WatchState) bool) {
		defer wg.Done()
		o := pw.Options
		o.Resource, o.Namespace, o.Name = resource, pw.Namespace, name
		pw.Client.Watch(ctx, o, func(s kube.WatchState) {
			if apply(s) {
				g.Reload()
			}
		})
	}
	wg.Add(2)
	go run("configmaps", pw.ConfigMap, func(s kube.WatchState) bool {
		data, live, err := configFromWatch(s, key)
		g.watched.mu.Lock()
		defer g.watched.mu.Unlock()
		was := g.watched.configLive
		g.logWatchState("configmap", "ConfigMap "+pw.Namespace+"/"+pw.ConfigMap, &g.watched.configLive, live, err)
		switch {
		case live:
			g.watched.o.config, g.watched.configKept = data, nil
		case g.watched.o.config != nil && g.watched.configKept == nil:
			g.watched.configKept = fileDigest(g.configPath)
		}
		return live || was
	})
	go run("secrets", pw.Secret, func(s kube.WatchState) bool {
		data, live, err := secretFromWatch(s)
		g.watched.mu.Lock()
		defer g.watched.mu.Unlock()
		was := g.watched.secretLive
		g.logWatchState("secret", "Secret "+secretName, &g.watched.secretLive, live, err)
		switch {
		case live:
			g.watched.o.secret, g.watched.secretKept = data, nil
		case g.watched.o.secret != nil && g.watched.secretKept == nil:
			g.watched.secretKept = dirDigest(pw.SecretDir)
		}
		return live || was
	})
	wg.Wait()
}

// logWatchState says when a watch becomes, or stops being, the source,
// and keeps garra_policy_watch_live{object} in step.
func (g *Gateway) logWatchState(object, what string, was *bool, live bool, err error) {
	v := 0.0
	if live {
		v = 1
	}
	g.metrics.watch.WithLabelValues(object).Set(v)
	switch {
	case live && !*was:
		g.log.Info("policy watch live: changes apply from the API server", "object", what)
	case !live && *was:
		if err == nil {
			err = fmt.Errorf("%s is absent", what)
		}
		g.log.Warn("policy watch lost; what it last delivered stays the source until the mounted files change or it is back", "object", what, "error", err.Error())
	}
	*was = live
}

// keptRelease makes the mounted files the source again for each half of
// the overlay a lost watch left in place, once those files differ from
// what they were when it was lost: the kubelet has written a newer
// version since. The file watch calls it before each reload.
func (g *Gateway) keptRelease() {
	g.watched.mu.Lock()
	defer g.watched.mu.Unlock()
	w := &g.watched
	if w.configKept != nil && !bytes.Equal(fileDigest(g.configPath), w.configKept) {
		w.o.config, w.configKept = nil, nil
		g.log.Info("the mounted config file changed while the policy watch is lost: it is the source now", "path", g.configPath)
	}
	if w.secretKept != nil && !bytes.Equal(dirDigest(w.o.secretDir), w.secretKept) {
		w.o.secret, w.secretKept = nil, nil
		g.log.Info("the mounted token files changed while the policy watch is lost: they are the source now", "dir", w.o.secretDir)
	}
}

// fileDigest is the sha256 of path's content; an unreadable file digests
// as its error's text, so that its coming back reads as a change.
func fileDigest(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		b = []byte("unreadable: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// dirDigest is the sha256 of the names and contents of the visible
// entries directly in dir: the token files of a mounted Secret (the
// kubelet's own "..data" entries are hidden).
func dirDigest(dir string) []byte {
	h := sha256.New()
	entries, err := os.ReadDir(dir)
	if err != nil {
		h.Write([]byte("unreadable: " + err.Error()))
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		h.Write([]byte(e.Name()))
		h.Write([]byte{0})
		h.Write(fileDigest(filepath.Join(dir, e.Name())))
	}
	return h.Sum(nil)
}

// configFromWatch is the config file's content in a ConfigMap state; nil
// (the file) when the watch is not live, the object is absent or holds no
// such key.
func configFromWatch(s kube.WatchState, key string) ([]byte, bool, error) {
	if s.Err != nil || s.Raw == nil {
		return nil, false, s.Err
	}
	var cm kube.ConfigMap
	if err := json.Unmarshal(s.Raw, &cm); err != nil {
		return nil, false, fmt.Errorf("decode the ConfigMap: %w", err)
	}
	v, ok := cm.Data[key]
	if !ok {
		return nil, false, fmt.Errorf("the ConfigMap holds no key %s", key)
	}
	return []byte(v), true, nil
}

// secretFromWatch is a Secret state's data; nil (the files) when the
// watch is not live or the object is absent.
func secretFromWatch(s kube.WatchState) (map[string][]byte, bool, error) {
	if s.Err != nil || s.Raw == nil {
		return nil, false, s.Err
	}
	var sec kube.Secret
	if err := json.Unmarshal(s.Raw, &sec); err != nil {
		return nil, false, fmt.Errorf("decode the Secret: %w", err)
	}
	if sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	return sec.Data, true, nil
}
