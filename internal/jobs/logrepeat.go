package jobs

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// repeatLimit passes each distinct warning or error of River's background
// loops at most once per window, and the next one after the window with
// the number held back. While the database is down River's producers,
// notifier, elector and maintenance services each log an error every
// poll (about six lines a second here, hundreds per minute) that all say
// the same thing; the API logs the outage itself once (httpapi). Errors
// about one job (jobexecutor) are never held back.
type repeatLimit struct {
	slog.Handler
	st *repeatState
}

type repeatState struct {
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	seen   map[string]*repeated
}

type repeated struct {
	last time.Time // when it was last passed
	held int       // held back since
}

func newRepeatLimit(h slog.Handler, window time.Duration) repeatLimit {
	return repeatLimit{Handler: h, st: &repeatState{window: window, now: time.Now, seen: map[string]*repeated{}}}
}

func (h repeatLimit) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn || strings.HasPrefix(r.Message, "jobexecutor") {
		return h.Handler.Handle(ctx, r)
	}
	key := r.Level.String() + " " + r.Message
	h.st.mu.Lock()
	now := h.st.now()
	e := h.st.seen[key]
	if e != nil && now.Sub(e.last) < h.st.window {
		e.held++
		h.st.mu.Unlock()
		return nil
	}
	held := 0
	if e != nil {
		held = e.held
	}
	if len(h.st.seen) > 1000 {
		clear(h.st.seen) // River's messages are a fixed set; this is a guard
	}
	h.st.seen[key] = &repeated{last: now}
	h.st.mu.Unlock()
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", held), slog.Duration("within", h.st.window))
	}
	return h.Handler.Handle(ctx, r)
}

func (h repeatLimit) WithAttrs(a []slog.Attr) slog.Handler {
	return repeatLimit{Handler: h.Handler.WithAttrs(a), st: h.st}
}

func (h repeatLimit) WithGroup(n string) slog.Handler {
	return repeatLimit{Handler: h.Handler.WithGroup(n), st: h.st}
}
