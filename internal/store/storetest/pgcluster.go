package storetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// Cluster is a private PostgreSQL server for tests that must stop and
// start the database under a running controller (an outage), which the
// shared server of BAREMETAL_TEST_DATABASE_URL must never do. It listens
// on clusterHost on a port of its own, trusts every local connection, and
// keeps its data in a temporary directory removed when the test ends.
type Cluster struct {
	bin  string // directory of initdb, pg_ctl, postgres
	dir  string // data directory
	log  string // server log file
	port int
	// runAs is the user the server runs as when the test runs as root:
	// initdb and postgres refuse to run as root.
	runAs string
}

// clusterHost is the loopback address clusters listen on. Not 127.0.0.1:
// an outage test stops its server for a while, and the port it frees
// must not go to one of the many listeners and connections that tests
// running alongside open on 127.0.0.1, or the server could not listen
// again. Linux routes all of 127.0.0.0/8 to the loopback interface.
const clusterHost = "127.0.0.3"

// StartCluster initialises and starts a private cluster. Without
// PostgreSQL's server binaries (/usr/lib/postgresql/*/bin, or
// BAREMETAL_TEST_PG_BIN) the test is skipped, or fails under CI.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := pgBinDir()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin; CI must run the outage tests")
		}
		t.Skip("no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin; skipping")
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		if _, err := user.Lookup(c.runAs); err != nil {
			t.Fatalf("running as root, and there is no %q user to run PostgreSQL as: %v", c.runAs, err)
		}
	}
	// Not t.TempDir: its parents are root's, mode 0700, and the server
	// runs as another user.
	base, err := os.MkdirTemp("", "bmtest-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	c.dir, c.log = filepath.Join(base, "data"), filepath.Join(base, "server.log")
	if c.runAs != "" {
		if out, err := exec.Command("chown", c.runAs, base).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v: %s", base, err, out)
		}
	}
	c.port = freePort(t)
	c.run(t, "initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
	// Settings for a throwaway server: no unix socket (its default
	// directory may not be writable), small memory, and no fsync: the
	// machine does not crash during a test, and a killed server loses
	// nothing the kernel already has. (synchronous_commit stays on: with
	// it off, an immediate stop loses the last commits.)
	conf := fmt.Sprintf("\nlisten_addresses = '%s'\nport = %d\nunix_socket_directories = ''\n"+
		"fsync = off\nfull_page_writes = off\nshared_buffers = 16MB\nmax_connections = 100\n", clusterHost, c.port)
	f, err := os.OpenFile(filepath.Join(c.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatalf("configure cluster: %v", err)
	}
	c.Start(t)
	t.Cleanup(func() {
		// Immediate: nothing to keep, and a fast stop waits for clients.
		_, _ = c.pgCtl("stop", "-m", "immediate")
	})
	return c
}

// URL is the connection URL of database db ("postgres" always exists).
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@%s:%d/%s?sslmode=disable", clusterHost, c.port, db)
}

// Port is the TCP port the server listens on.
func (c *Cluster) Port() int { return c.port }

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if out, err := c.pgCtl("start", "-w", "-t", "60", "-l", c.log); err != nil {
		t.Fatalf("start PostgreSQL: %v: %s\n%s", err, out, c.serverLog())
	}
}

// Stop stops the server: mode "fast" disconnects clients and shuts down
// cleanly, "immediate" is a crash (recovery runs at the next start).
func (c *Cluster) Stop(t testing.TB, mode string) {
	t.Helper()
	if out, err := c.pgCtl("stop", "-w", "-t", "60", "-m", mode); err != nil {
		t.Fatalf("stop PostgreSQL (%s): %v: %s\n%s", mode, err, out, c.serverLog())
	}
}

func (c *Cluster) pgCtl(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return c.command(ctx, "pg_ctl", append([]string{"-D", c.dir}, args...)...).CombinedOutput()
}

func (c *Cluster) run(t testing.TB, prog string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if out, err := c.command(ctx, prog, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", prog, err, out)
	}
}

func (c *Cluster) command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, prog)
	if c.runAs != "" {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	}
	return exec.CommandContext(ctx, path, args...)
}

func (c *Cluster) serverLog() string {
	b, _ := os.ReadFile(c.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// pgBinDir finds the server binaries: BAREMETAL_TEST_PG_BIN, else the
// newest /usr/lib/postgresql/N/bin (Debian's layout).
func pgBinDir() string {
	if d := os.Getenv("BAREMETAL_TEST_PG_BIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the server binds it; on a test machine that is rare.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", clusterHost+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
