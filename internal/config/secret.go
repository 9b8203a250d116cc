package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// MaxSecretFileBytes bounds a secret file. Tokens and keys are short; a
// larger file is a wrong path, not a credential.
const MaxSecretFileBytes = 4 << 10

// ReadSecretFile reads a token or key from path, the way Kubernetes mounts
// a Secret key: the file's whole content with surrounding whitespace (the
// trailing newline an editor adds) trimmed. Symlinks are followed (a Secret
// volume's files are links into its current data). A file that is missing,
// unreadable, not a regular file, larger than MaxSecretFileBytes or empty is
// an error; the error never holds the content.
//
// Why files at all: a value in a process's environment stays there, in
// /proc/<pid>/environ, for the life of the process and is copied into every
// child that is not given an explicit environment; a file is read once,
// can be rotated, and reaches no child.
func ReadSecretFile(path string) (string, error) {
	data, err := readSecretBytes(path)
	if err != nil {
		return "", err
	}
	return SecretContent(data, path)
}

// ReadSecretLines reads a file holding one or more tokens, one per line,
// with the checks of ReadSecretFile. Blank lines and the whitespace around
// each token are ignored; a file with no token is an error. Several lines
// are how a token is rotated without an outage: while the new one is
// handed out, the old one, on the next line, still authenticates.
func ReadSecretLines(path string) ([]string, error) {
	data, err := readSecretBytes(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return out, nil
}

// SecretReader reads one secret file the way ReadSecretFile does: its
// content with surrounding whitespace trimmed, an error (never holding the
// content) when it is missing, empty or too large. ReadSecretFile reads
// the disk; the gateway passes one that answers the paths of its mounted
// tokens Secret from the same Secret as the API server serves it, so that
// a change does not wait for the kubelet to rewrite the files. Every
// reader of a config's secret files takes one, nil meaning the disk.
type SecretReader func(path string) (string, error)

// orDisk is r, or ReadSecretFile when r is nil.
func (r SecretReader) orDisk() SecretReader {
	if r == nil {
		return ReadSecretFile
	}
	return r
}

// Lines is ReadSecretLines through r: one token per non-blank line.
func (r SecretReader) Lines(path string) ([]string, error) {
	v, err := r.orDisk()(path)
	if err != nil {
		return nil, err
	}
	return SecretLines(v, path)
}

// SecretLines splits the content of a token file into its tokens, as
// ReadSecretLines does; path is for the error.
func SecretLines(content, path string) ([]string, error) {
	var out []string
	for _, l := range strings.Split(content, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return out, nil
}

// SecretContent applies ReadSecretFile's checks to data read from
// somewhere else than a file (a Secret's key): the bound, the trim, and
// the refusal of an empty value; path names it in the error.
func SecretContent(data []byte, path string) (string, error) {
	if len(data) > MaxSecretFileBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", path, MaxSecretFileBytes)
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// firstLine is the token a client sends from a file of token lines: the
// first, which is the newest during a rotation.
func (r SecretReader) firstLine(path string) (string, error) {
	lines, err := r.Lines(path)
	if err != nil {
		return "", err
	}
	return lines[0], nil
}

// readSecretBytes is the bounded read of a regular file shared by the
// secret readers. The file is opened non-blocking: opening a FIFO for
// reading waits for a writer, and one planted at a credential path would
// hold the reload and the readiness answer that read it for good; the
// non-regular file is refused after the open instead.
func readSecretBytes(path string) ([]byte, error) {
	return readSecretBytesMax(path, MaxSecretFileBytes)
}

// readSecretBytesMax is readSecretBytes with its own bound.
func readSecretBytesMax(path string, most int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(most)+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > most {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, most)
	}
	return data, nil
}

// errNoSource is returned by secretFrom when neither key is set.
var errNoSource = errors.New("not set")

// secretFrom resolves one credential that the config names either by an
// environment variable (envKey: env) or by a file (fileKey: file). Setting
// both is an error rather than a precedence rule: with two sources, which
// one is live is a question nobody should have to answer during an
// incident.
func secretFrom(envKey, env, fileKey, file string, getenv func(string) string, readFile func(string) (string, error)) (string, error) {
	switch {
	case env != "" && file != "":
		return "", fmt.Errorf("%s and %s are both set: set only one", envKey, fileKey)
	case file != "":
		v, err := readFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", fileKey, err)
		}
		return v, nil
	case env != "":
		if v := getenv(env); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("%s: %s is not set", envKey, env)
	}
	return "", fmt.Errorf("%s or %s: %w", envKey, fileKey, errNoSource)
}

// Tokens are the orchestrator's bearer tokens for the gateway: the
// variable key_env names, or every line of key_file (exactly one of them
// is set); any of them authenticates it. An error means the orchestrator
// is disabled; it names the key, never a token.
func (o Orchestrator) Tokens(getenv func(string) string) ([]string, error) {
	return o.TokensWith(getenv, nil)
}

// TokensWith is Tokens with key_file read by read (nil: the disk).
func (o Orchestrator) TokensWith(getenv func(string) string, read SecretReader) ([]string, error) {
	if o.KeyFile != "" && o.KeyEnv == "" {
		lines, err := read.Lines(o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("key_file: %w", err)
		}
		return lines, nil
	}
	t, err := secretFrom("key_env", o.KeyEnv, "key_file", o.KeyFile, getenv, read.orDisk())
	if err != nil {
		return nil, err
	}
	return []string{t}, nil
}

// Token is the gateway's bearer token for the orchestrator's sandbox: the
// variable token_env names, or the first line of token_file (the sandbox
// accepts every line of its copy, so during a rotation the first is the
// new token and the old one still works).
func (s OrchestratorSandbox) Token(getenv func(string) string) (string, error) {
	return s.TokenWith(getenv, nil)
}

// TokenWith is Token with token_file read by read (nil: the disk).
func (s OrchestratorSandbox) TokenWith(getenv func(string) string, read SecretReader) (string, error) {
	return secretFrom("token_env", s.TokenEnv, "token_file", s.TokenFile, getenv, read.firstLine)
}

// ReadAPIKeyFile fills gateway.api_key from gateway.api_key_file, once,
// for the process that serves with it. GARRAIA_GATEWAY_API_KEY still beats
// both (env beats file), so with it set the file is not read. An api_key
// written in the config as well is an error, and so is a file that cannot
// be read; the key is then left empty (the gateway serves without an
// owner, which closes POST /mcp).
func (c *Config) ReadAPIKeyFile(getenv func(string) string) error {
	return c.ReadAPIKeyFileWith(getenv, nil)
}

// ReadAPIKeyFileWith is ReadAPIKeyFile reading through read (nil: the
// disk).
func (c *Config) ReadAPIKeyFileWith(getenv func(string) string, read SecretReader) error {
	g := &c.Gateway
	if g.APIKeyFile == "" || getenv(EnvGatewayAPIKey) != "" {
		return nil
	}
	if g.APIKey != "" {
		g.APIKey = ""
		return errors.New("gateway.api_key and gateway.api_key_file are both set: set only one")
	}
	v, err := read.orDisk()(g.APIKeyFile)
	if err != nil {
		return fmt.Errorf("gateway.api_key_file: %w", err)
	}
	g.APIKey = v
	return nil
}
