//go:build unix

package sqlite_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlite"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// The database and its -wal and -shm files hold user data and sealed
// secrets: 0600 under the usual umask 022, which alone would give 0644.
// Not parallel: the umask belongs to the whole process.
func TestDatabaseFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)

	path := filepath.Join(t.TempDir(), "data", "baremetal.db")
	s, err := sqlite.Open(t.Context(), path, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A write, so the WAL holds data (the files exist from the open).
	if err := s.InsertNode(t.Context(), &baremetal.Node{Name: "n", Driver: baremetal.DriverRedfish, ProvisionState: baremetal.StateEnroll}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		checkMode(t, p, 0o600)
	}
	checkMode(t, filepath.Dir(path), 0o700)
}

// Files an older controller created 0644 are tightened at open.
func TestLooseDatabaseFilesTightened(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baremetal.db")
	s, err := sqlite.Open(t.Context(), path, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.WriteFile(p, nil, 0o644); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err = sqlite.Open(t.Context(), path, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		checkMode(t, p, 0o600)
	}
}

// One store per database: a second Open fails at once, naming the data
// dir and the pid holding it, and succeeds once the first is closed.
func TestSecondOpenRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "baremetal.db")
	s, err := sqlite.Open(t.Context(), path, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(t.Context(), path, storetest.Box())
	if err == nil {
		t.Fatal("a second Open of the same database succeeded")
	}
	for _, want := range []string{dir, "pid " + strconv.Itoa(os.Getpid()), "in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(t.Context(), path, storetest.Box())
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s: mode %04o, want %04o", filepath.Base(path), got, want)
	}
}
