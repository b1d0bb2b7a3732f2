package lldp

import (
	"os"
	"sync"
	"time"
)

// Replay is a Source of the given frames in order, then nothing until
// the read deadline, as a socket on a quiet link: the switch of a
// simulated machine (internal/bmc/sim), whose agent has no link to listen
// on, and tests.
func Replay(frames ...[]byte) Source {
	r := &replay{frames: make(chan []byte, len(frames)), moved: make(chan struct{})}
	for _, f := range frames {
		r.frames <- f
	}
	return r
}

type replay struct {
	frames chan []byte

	mu       sync.Mutex
	deadline time.Time
	moved    chan struct{} // closed, and replaced, when the deadline moves
}

func (r *replay) SetReadDeadline(t time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deadline = t
	close(r.moved)
	r.moved = make(chan struct{})
	return nil
}

func (r *replay) Read(p []byte) (int, error) {
	for {
		r.mu.Lock()
		d, moved := r.deadline, r.moved
		r.mu.Unlock()
		var expired <-chan time.Time // no deadline: wait for a frame
		stop := func() bool { return false }
		if !d.IsZero() {
			wait := time.Until(d)
			if wait <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			t := time.NewTimer(wait)
			expired, stop = t.C, t.Stop
		}
		select {
		case f := <-r.frames:
			stop()
			return copy(p, f), nil
		case <-moved:
			stop()
		case <-expired:
		}
	}
}

func (r *replay) Close() error { return nil }
