// Package pgtest gives tests a real PostgreSQL server: a throwaway one
// started from the machine's server binaries (initdb, pg_ctl) in a temp
// dir, listening only on a Unix socket there, or the server named by
// GARRA_TEST_POSTGRES_DSN. Each test gets a database of its own.
//
// Without a server the tests skip with the reason, unless
// GARRA_TEST_POSTGRES=require (what CI sets), which makes it a failure: a
// suite that silently skipped its PostgreSQL half would prove nothing.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables.
const (
	// EnvDSN names an existing server (a superuser's DSN) to use instead of
	// starting one.
	EnvDSN = "GARRA_TEST_POSTGRES_DSN"
	// EnvRequire, set to "require", makes a missing server a test failure.
	EnvRequire = "GARRA_TEST_POSTGRES"
)

var (
	once     sync.Once
	admin    string // superuser DSN of the server, database "postgres"
	startErr error
	srv      *server
	dbSeq    atomic.Int64
)

// Main runs the tests and stops the server they started, if any. Use it
// from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	return code
}

// DSN returns the DSN of a new, empty database on the test server, or
// skips (fails under GARRA_TEST_POSTGRES=require) without a server.
func DSN(t testing.TB) string {
	t.Helper()
	once.Do(func() { admin, startErr = start() })
	if startErr != nil {
		if os.Getenv(EnvRequire) == "require" {
			t.Fatalf("PostgreSQL required (%s=require) but unavailable: %v", EnvRequire, startErr)
		}
		t.Skipf("no PostgreSQL server: %v (set %s, or install the server binaries)", startErr, EnvDSN)
	}
	name := fmt.Sprintf("garra_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	return dsnFor(cfg.Host, cfg.Port, cfg.User, name)
}

// LoopbackDSN is dsn (from DSN) over TCP on 127.0.0.1 instead of the Unix
// socket, for what measures the network path; it skips when the server
// does not listen there.
func LoopbackDSN(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if srv == nil || srv.tcpPort == 0 {
		t.Skip("the test server does not listen on 127.0.0.1")
	}
	return dsnFor("127.0.0.1", uint16(srv.tcpPort), cfg.User, cfg.Database) //nolint:gosec // G115: a port
}

func dsnFor(host string, port uint16, user, db string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", host, port, user, db)
}

func start() (string, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn, nil
	}
	bin, err := binDir()
	if err != nil {
		return "", err
	}
	s, err := startServer(bin)
	if err != nil {
		return "", err
	}
	srv = s
	return dsnFor(s.dir, uint16(s.tcpPort), "postgres", "postgres"), nil //nolint:gosec // G115: a port
}

// binDir finds initdb and pg_ctl: pg_config's bindir, else the newest
// Debian-style /usr/lib/postgresql/<major>/bin.
func binDir() (string, error) {
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(found, func(a, b string) int { return major(b) - major(a) })
	dirs = append(dirs, found...)
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", errors.New("initdb and pg_ctl not found (pg_config --bindir, /usr/lib/postgresql/*/bin)")
}

func major(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

type server struct {
	bin, dir string
	tcpPort  int
	cred     *user.User // who runs the server; nil = this process's user
}

// startServer runs initdb and pg_ctl start in a fresh temp dir. The dir's
// path is short (a Unix socket path has a ~100 byte limit). PostgreSQL
// refuses to run as root, so under root the server runs as nobody.
func startServer(bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "garra-pg-")
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and no user nobody to run the server: %w", err)
		}
		s.cred = u
		if err := chown(dir, u); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// The socket in dir, and 127.0.0.1 on a free port (trust is safe on
	// neither beyond this machine: nothing listens on another interface).
	// fsync off: a test database need not survive a power cut.
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.tcpPort = port
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300", port, dir)
	if out, err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *server) stop() {
	_, _ = s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	_ = os.RemoveAll(s.dir)
}

func (s *server) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		if err := runAs(cmd, s.cred); err != nil {
			return nil, err
		}
	}
	return cmd.CombinedOutput()
}
