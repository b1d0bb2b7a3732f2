//go:build unix

package sqlite

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// dirLock is an exclusive flock(2) on a lock file next to the database.
// The embedded store is for one controller: the job runner treats every
// job still running at start as orphaned (internal/jobs/recovery.go),
// which is only true when no other process uses the database. The kernel
// drops the lock when the process dies, SIGKILL included, so a crash
// never leaves a stale lock behind.
type dirLock struct{ f *os.File }

// lockDir takes the lock for the database at dbPath, or fails at once
// naming the directory and the holder's pid.
func lockDir(dbPath string) (*dirLock, error) {
	dir := filepath.Dir(dbPath)
	name := dbPath + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(name); rerr == nil {
			if pid, perr := strconv.Atoi(string(bytes.TrimSpace(b))); perr == nil && pid > 0 {
				holder = "another controller (pid " + strconv.Itoa(pid) + ")"
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sqlite: data dir %s is in use by %s: the embedded database is for one controller at a time; stop that one or use another data dir (lock file %s)", dir, holder, name)
		}
		return nil, fmt.Errorf("sqlite: lock %s: %w", name, err)
	}
	// Record our pid for the message above. Failing to write it costs
	// only that detail, not the lock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// release drops the lock (closing the file does). The file stays: removing
// it could let a third process lock a new file while a second still holds
// the old one. A second release (a second Store.Close) does nothing.
func (l *dirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	return f.Close()
}
