package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// retryAfterSeconds is the Retry-After of every 503: long enough that a
// fleet of clients does not hammer a database that is coming back, short
// enough that a blip costs a few seconds.
const retryAfterSeconds = "5"

// outage logs a database outage once when the API first meets it and once
// when it ends, instead of a line per failed request. While it lasts, a
// probe pings the store every interval; the first ping that succeeds ends
// it. (Requests go on trying the database meanwhile: the probe only
// decides when to say it is back.)
type outage struct {
	log      *slog.Logger
	ping     func(context.Context) error
	interval time.Duration

	mu    sync.Mutex
	since time.Time // zero while the database is reachable
}

func newOutage(log *slog.Logger, ping func(context.Context) error) *outage {
	return &outage{log: log, ping: ping, interval: time.Second}
}

// report records that a request found the database unreachable; the first
// report of an outage logs it and starts the probe.
func (o *outage) report(ctx context.Context, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.since.IsZero() {
		return
	}
	o.since = time.Now()
	o.log.WarnContext(ctx, "database unreachable", "err", store.UnavailableCause(err),
		"effect", "API requests answer 503 unavailable with Retry-After until it is back")
	go o.probe(o.since)
}

func (o *outage) probe(since time.Time) {
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for range t.C {
		ctx, cancel := context.WithTimeout(context.Background(), o.interval)
		err := o.ping(ctx)
		cancel()
		if err == nil {
			o.mu.Lock()
			o.since = time.Time{}
			o.mu.Unlock()
			o.log.Info("database reachable again", "after", time.Since(since).Round(time.Millisecond))
			return
		}
		if !store.IsUnavailable(err) && !errors.Is(err, context.DeadlineExceeded) {
			// Not an outage but a closed store: the controller is
			// stopping, and this probe with it.
			return
		}
	}
}
