package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// copiedBinaryName is the file copy-binary writes in its directory.
const copiedBinaryName = "garra"

func newCopyBinaryCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "copy-binary DIR",
		Short: "Copy this garra binary to DIR/garra (a sandbox pod's init container, for an image without garra)",
		Long: `Copy the running garra binary to DIR/garra, mode 0755.

An orchestrator's sandbox may run in any image (a Go, Node or company build
image) that has no garra in it. The operator then gives the pod an init
container from the garra image that runs this command into an emptyDir
shared with the sandbox container, which runs DIR/garra sandbox in the
user's image. The binary is static, so it needs nothing from that image.

The copy is written beside its final name and renamed into place, so the
sandbox container never sees half a binary. DIR must exist.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dst, err := copySelf(args[0])
			if err != nil {
				return fmt.Errorf("copy-binary: %w", err)
			}
			_, err = fmt.Fprintln(cmd.ErrOrStderr(), "garra copied to", dst)
			return err
		},
	}
}

// copySelf copies the running executable into dir and returns the path of
// the copy.
func copySelf(dir string) (string, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("destination: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("destination %s is not a directory", dir)
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this binary: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return "", fmt.Errorf("open this binary: %w", err)
	}
	defer func() { _ = src.Close() }()
	dst := filepath.Join(dir, copiedBinaryName)
	tmp, err := os.CreateTemp(dir, "."+copiedBinaryName+"-*")
	if err != nil {
		return "", fmt.Errorf("create the copy: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, src); err != nil {
		return "", fmt.Errorf("write the copy: %w", err)
	}
	// 0755: the sandbox container may run as another uid than the one
	// that wrote it (the fsGroup owns the volume, not the file).
	if err := tmp.Chmod(0o755); err != nil {
		return "", fmt.Errorf("chmod the copy: %w", err)
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return "", fmt.Errorf("flush the copy: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("rename the copy into place: %w", err)
	}
	done = true
	return dst, nil
}
