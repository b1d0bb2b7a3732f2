//go:build !unix

package sqlite

import "errors"

type dirLock struct{}

// lockDir refuses: without flock the store cannot know it is the only
// controller on its database, and the job runner relies on that.
func lockDir(string) (*dirLock, error) {
	return nil, errors.New("sqlite: the embedded store needs flock(2) (a Unix system); use PostgreSQL here")
}

func (l *dirLock) release() error { return nil }
