package provider

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// Polling cadence of waits: fast at first (the simulated fleet and healthy
// BMCs answer in milliseconds), then backing off so a long deploy costs
// few requests.
var (
	pollMin = 250 * time.Millisecond
	pollMax = 5 * time.Second
)

// maxTransientPollErrors is how many consecutive failed reads a wait
// tolerates (each already retried by the client) before giving up.
const maxTransientPollErrors = 5

// errWaitTimeout is returned (wrapped with the context's error) when a wait
// runs out of time; the caller explains it with the last value seen.
var errWaitTimeout = errors.New("timed out")

// waitFor calls get until done reports true, done or get returns a
// permanent error, or ctx ends. It returns the last value read in every
// case, so the caller can say what the object looked like.
func waitFor[T any](ctx context.Context, what string, get func(context.Context) (*T, error), done func(*T) (bool, error)) (*T, error) {
	var last *T
	interval := pollMin
	transient := 0
	for {
		v, err := get(ctx)
		switch {
		case err == nil:
			transient = 0
			last = v
			ok, derr := done(v)
			if derr != nil {
				return last, derr
			}
			if ok {
				return last, nil
			}
		case ctx.Err() != nil:
			return last, errors.Join(errWaitTimeout, ctx.Err())
		case isTransient(err) && transient < maxTransientPollErrors:
			transient++
			tflog.Warn(ctx, "transient error while waiting; retrying", map[string]any{"waiting_for": what, "error": err.Error()})
		default:
			return last, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return last, errors.Join(errWaitTimeout, ctx.Err())
		case <-t.C:
		}
		interval = min(interval*3/2, pollMax)
	}
}

// isTransient: server trouble and transport failures may pass; answers
// about the object itself (not found, forbidden, invalid) will not.
func isTransient(err error) bool {
	if _, ok := apiclient.AsAPIError(err); !ok {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return errors.Is(err, apiclient.ErrServer) || errors.Is(err, apiclient.ErrUnavailable)
}
