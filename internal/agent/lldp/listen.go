package lldp

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Source delivers the frames one NIC receives. Open makes one on a raw
// socket; an *os.File over such a socket is one.
type Source interface {
	// Read reads one frame into p, or fails with os.ErrDeadlineExceeded
	// once the deadline passed.
	Read(p []byte) (int, error)
	SetReadDeadline(t time.Time) error
	Close() error
}

// Listen listens on every source at once (by NIC name) until each has
// delivered an LLDP frame that parses, or until wait has passed, and
// returns the neighbours heard, by NIC name. A NIC stops as soon as it
// has one, so a rack whose switches all speak LLDP is done in at most one
// transmit interval. Frames that are not LLDP, or do not parse, are
// skipped: the next one may. Sources are closed before it returns; a
// source that fails is reported to failed (may be nil) and given up.
func Listen(ctx context.Context, sources map[string]Source, wait time.Duration, failed func(nic string, err error)) map[string]api.AgentLLDP {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var (
		mu  sync.Mutex
		out = make(map[string]api.AgentLLDP, len(sources))
		wg  sync.WaitGroup
	)
	for nic, src := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = src.Close() }() // read-only: nothing is lost on close
			// A context ending early (the agent stopping) unblocks the
			// read by moving its deadline to now.
			stop := context.AfterFunc(ctx, func() { _ = src.SetReadDeadline(time.Now()) })
			defer stop()
			n, err := listenOne(ctx, src, deadline)
			switch {
			case err == nil:
				mu.Lock()
				out[nic] = n
				mu.Unlock()
			case errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil:
				// Nothing heard in time: no neighbour, no failure.
			case failed != nil:
				failed(nic, err)
			}
		}()
	}
	wg.Wait()
	return out
}

func listenOne(ctx context.Context, src Source, deadline time.Time) (api.AgentLLDP, error) {
	if err := src.SetReadDeadline(deadline); err != nil {
		return api.AgentLLDP{}, err
	}
	// An LLDPDU fits one untagged frame (1500 bytes of payload); a jumbo
	// frame's excess is cut, and its TLVs then fail to parse.
	buf := make([]byte, 9216)
	for ctx.Err() == nil {
		n, err := src.Read(buf)
		if err != nil {
			return api.AgentLLDP{}, err
		}
		if nb, err := ParseFrame(buf[:n]); err == nil {
			return nb, nil
		}
	}
	return api.AgentLLDP{}, ctx.Err()
}
