package agent

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// Loop reports to the controller until its context ends, surviving
// controller restarts, network loss and its own panics: as PID 1 the agent
// must never exit (the kernel panics when init dies).
type Loop struct {
	Controller Controller
	// Collect gathers the inventory sent with every heartbeat.
	Collect func() Inventory
	Version string
	// Interval between accepted heartbeats (default 10s); the controller
	// may ask for another with Reply.NextHeartbeatSeconds.
	Interval time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed heartbeat
	// (defaults 1s and 1m); it doubles per failure, with jitter so a rack
	// of agents does not hammer a restarted controller in step.
	MinBackoff, MaxBackoff time.Duration
	// Accepted is called after each heartbeat the controller accepted.
	Accepted func(n int)
	Log      *slog.Logger
}

// Run loops until ctx is done.
func (l *Loop) Run(ctx context.Context) {
	interval := orDefault(l.Interval, 10*time.Second)
	minB, maxB := orDefault(l.MinBackoff, time.Second), orDefault(l.MaxBackoff, time.Minute)
	backoff := minB
	accepted := 0
	for {
		reply, err := l.once(ctx)
		wait := interval
		if err != nil {
			l.Log.Warn("heartbeat failed; retrying", "error", err, "retry_in", backoff.Round(time.Millisecond))
			wait = backoff
			backoff = min(backoff*2, maxB)
		} else {
			accepted++
			backoff = minB
			if reply.NextHeartbeatSeconds > 0 {
				wait = time.Duration(reply.NextHeartbeatSeconds) * time.Second
			}
			if accepted == 1 {
				l.Log.Info("controller accepted the first heartbeat")
			}
			if l.Accepted != nil {
				l.safely("accepted callback", func() { l.Accepted(accepted) })
			}
		}
		// ±20% jitter.
		wait = time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// once sends one heartbeat; a panic anywhere in it becomes an error.
func (l *Loop) once(ctx context.Context) (r Reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	hb := Heartbeat{AgentVersion: l.Version, BootID: readTrim("/proc/sys/kernel/random/boot_id"), UptimeSeconds: uptime()}
	if l.Collect != nil {
		hb.Inventory = l.Collect()
	}
	return l.Controller.Heartbeat(ctx, hb)
}

func (l *Loop) safely(what string, f func()) {
	defer func() {
		if p := recover(); p != nil {
			l.Log.Error("panic in "+what, "panic", fmt.Sprint(p))
		}
	}()
	f()
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func uptime() float64 {
	f := strings.Fields(readTrim("/proc/uptime"))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
