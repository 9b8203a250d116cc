//go:build !unix

package pgtest

import (
	"errors"
	"os/exec"
	"os/user"
)

func chown(string, *user.User) error { return errors.New("cannot run the server as another user here") }

func runAs(*exec.Cmd, *user.User) error {
	return errors.New("cannot run the server as another user here")
}
