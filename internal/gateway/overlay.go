package gateway

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/garraia/garra/internal/config"
)

// overlay is where a reload reads its inputs: the config file and the
// secret files it names, each either from disk or, when the gateway
// watches its policy objects and that watch is live, from the object as
// the API server holds it. The objects are the ones the files are mounted
// from, so the bytes are the same; only the kubelet's delay is gone. An
// overlay is immutable: a watch event makes a new one.
type overlay struct {
	// config is the config file's content from the watched ConfigMap;
	// nil: read configPath.
	config []byte
	// secretDir is where the watched Secret is mounted: a secret file
	// directly in it is that Secret's key of the file's name.
	secretDir string
	// secret is the watched Secret's data; nil: read the files.
	secret map[string][]byte
	// secretName names the Secret in errors (namespace/name).
	secretName string
}

// readConfig is the config file's content.
func (o overlay) readConfig(path string) ([]byte, error) {
	if o.config != nil {
		return o.config, nil
	}
	return os.ReadFile(path)
}

// shadows reports whether path is a key of the watched Secret rather
// than a file to read: the Secret is live and path is directly in the
// directory it is mounted on.
func (o overlay) shadows(path string) (string, bool) {
	if o.secret == nil || o.secretDir == "" {
		return "", false
	}
	if filepath.Dir(filepath.Clean(path)) != filepath.Clean(o.secretDir) {
		return "", false
	}
	return filepath.Base(path), true
}

// reader reads secret files through the overlay. A key the live Secret
// does not hold is missing, as its file would be once the kubelet caught
// up: the older file is not consulted, or a token the operator removed
// would still authenticate until then.
func (o overlay) reader() config.SecretReader {
	if o.secret == nil {
		return config.ReadSecretFile
	}
	return func(path string) (string, error) {
		key, ok := o.shadows(path)
		if !ok {
			return config.ReadSecretFile(path)
		}
		v, ok := o.secret[key]
		if !ok {
			return "", fmt.Errorf("%s: Secret %s holds no key %s", path, o.secretName, key)
		}
		return config.SecretContent(v, path)
	}
}

// source names where a reload read its config, for the log.
func (o overlay) source() string {
	switch {
	case o.config != nil && o.secret != nil:
		return "api-server"
	case o.config != nil:
		return "api-server (config), files (tokens)"
	case o.secret != nil:
		return "files (config), api-server (tokens)"
	}
	return "files"
}
