//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

func ids(u *user.User) (uint32, uint32, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("uid of %s: %w", u.Username, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("gid of %s: %w", u.Username, err)
	}
	return uint32(uid), uint32(gid), nil
}

func chown(dir string, u *user.User) error {
	uid, gid, err := ids(u)
	if err != nil {
		return err
	}
	return os.Chown(dir, int(uid), int(gid))
}

func runAs(cmd *exec.Cmd, u *user.User) error {
	uid, gid, err := ids(u)
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	cmd.Env = append(os.Environ(), "HOME="+cmd.Dir)
	return nil
}
