package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/strictargs"
)

// Limits of the file tools.
const (
	maxPathLen        = 4096
	maxReadBytesLimit = 10 << 20
	maxWriteBytes     = 8 << 20
)

func fileReadTool() Tool {
	return Tool{
		Name: ToolFileRead,
		Description: "Read a UTF-8 text file inside the workspace. Relative paths resolve against the working directory. " +
			"Files larger than max_bytes are refused; long output is truncated.",
		InputSchema: objectSchema(map[string]prop{
			"path":      stringProp("File path, relative to the working directory (or absolute inside the workspace).", maxPathLen),
			"max_bytes": intProp("Refuse files larger than this many bytes.", 1, maxReadBytesLimit, int(jail.DefaultMaxReadBytes)),
		}, "path"),
	}
}

func fileWriteTool() Tool {
	return Tool{
		Name: ToolFileWrite,
		Description: "Create or replace a file inside the workspace with the given content (atomic; parent directories are created). " +
			"Relative paths resolve against the working directory. Paths through a .git directory are refused.",
		InputSchema: objectSchema(map[string]prop{
			"path":    stringProp("File path, relative to the working directory (or absolute inside the workspace).", maxPathLen),
			"content": stringProp("The complete new content of the file.", maxWriteBytes),
		}, "path", "content"),
	}
}

type fileReadArgs struct {
	Path     *string `json:"path"`
	MaxBytes *int    `json:"max_bytes"`
}

type fileWriteArgs struct {
	Path    *string `json:"path"`
	Content *string `json:"content"`
}

func (l *Local) callFileRead(_ context.Context, raw json.RawMessage) (Result, error) {
	var a fileReadArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return argsError(ToolFileRead, err), nil
	}
	path, err := requiredString("path", a.Path, maxPathLen)
	if err == nil && path == "" {
		err = errors.New("path: must not be empty")
	}
	if err != nil {
		return argsError(ToolFileRead, err), nil
	}
	maxBytes, err := intInRange("max_bytes", a.MaxBytes, int(jail.DefaultMaxReadBytes), 1, maxReadBytesLimit)
	if err != nil {
		return argsError(ToolFileRead, err), nil
	}
	data, err := l.jail.ReadFile(path, int64(maxBytes))
	if err != nil {
		return l.fileError(err), nil
	}
	if !utf8.Valid(data) {
		return errorResult("%s is not UTF-8 text (%d bytes); not shown", l.displayPath(path), len(data)), nil
	}
	return Result{Output: capOutput(string(data), l.maxOut)}, nil
}

func (l *Local) callFileWrite(_ context.Context, raw json.RawMessage) (Result, error) {
	var a fileWriteArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return argsError(ToolFileWrite, err), nil
	}
	path, err := requiredString("path", a.Path, maxPathLen)
	if err == nil && path == "" {
		err = errors.New("path: must not be empty")
	}
	if err != nil {
		return argsError(ToolFileWrite, err), nil
	}
	if a.Content == nil {
		return argsError(ToolFileWrite, errors.New("content: required")), nil
	}
	if len(*a.Content) > maxWriteBytes {
		return argsError(ToolFileWrite, fmt.Errorf("content: longer than %d bytes", maxWriteBytes)), nil
	}
	if err := l.jail.WriteFileWith(path, []byte(*a.Content), jail.WriteOptions{Backup: l.backup}); err != nil {
		return l.fileError(err), nil
	}
	return Result{Output: "wrote " + strconv.Itoa(len(*a.Content)) + " bytes to " + l.displayPath(path)}, nil
}

// fileError turns a jail error into the model's message. A refusal is
// jail.ErrDenied's sentence and nothing else: no path, no root, so the tool
// is not an existence oracle. Other errors already name the path relative
// to the root; the scrub is a second line of defence.
func (l *Local) fileError(err error) Result {
	if errors.Is(err, jail.ErrDenied) {
		return Result{Output: jail.ErrDenied.Error(), IsError: true}
	}
	return Result{Output: scrubPaths(err.Error(), l.hostDirs()...), IsError: true}
}
