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

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Loop reports to the controller until its context ends, surviving
// controller restarts, network loss and its own panics: as PID 1 the agent
// must never exit (the kernel panics when init dies). The replies hand
// out commands, which Commands runs while the heartbeats go on.
type Loop struct {
	Controller Controller
	// Collect gathers the inventory sent with every heartbeat.
	Collect func() api.AgentInventory
	// Commands runs the commands the controller hands out; nil means
	// they are logged and not run.
	Commands *Runner
	Version  string
	// Interval between accepted heartbeats (default 10s); the controller
	// may ask for another with Reply.NextHeartbeatSeconds.
	Interval time.Duration
	// AfterCommand is the wait after the heartbeat that first reported
	// a command's outcome (default 1s), when that is shorter than the
	// interval: the controller's next step for the node (the next
	// command, or word that there is none) then comes without delay.
	// The report itself goes out as soon as the command finishes.
	AfterCommand time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed heartbeat
	// (defaults 1s and 1m); it doubles per failure, with jitter so a rack
	// of agents does not hammer a restarted controller in step.
	MinBackoff, MaxBackoff time.Duration
	// Accepted is called after each heartbeat the controller accepted.
	Accepted func(n int)
	// Boot returns the kernel's id of this boot and the seconds since it
	// started; nil reads them from /proc, as the agent does. A simulated
	// machine (internal/bmc/sim), whose agent runs in a process that is
	// not its kernel, gives its own.
	Boot func() (id string, uptime float64)
	Log  *slog.Logger
}

// Run loops until ctx is done.
func (l *Loop) Run(ctx context.Context) {
	interval := orDefault(l.Interval, 10*time.Second)
	minB, maxB := orDefault(l.MinBackoff, time.Second), orDefault(l.MaxBackoff, time.Minute)
	after := orDefault(l.AfterCommand, time.Second)
	var finished <-chan struct{} // nil (never ready) without a runner
	if l.Commands != nil {
		finished = l.Commands.Finished()
	}
	backoff := minB
	accepted := 0
	for {
		reply, firstOutcome, err := l.once(ctx)
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
			if firstOutcome {
				wait = min(wait, after)
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
		case <-finished:
			t.Stop()
		case <-t.C:
		}
	}
}

// once sends one heartbeat and hands the reply's command to the runner;
// a panic anywhere in it becomes an error. firstOutcome is true when the
// heartbeat was the first to report a command's outcome.
func (l *Loop) once(ctx context.Context) (r api.AgentReply, firstOutcome bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	hb := api.AgentHeartbeat{AgentVersion: l.Version}
	if l.Boot != nil {
		hb.BootID, hb.UptimeSeconds = l.Boot()
	} else {
		hb.BootID, hb.UptimeSeconds = readTrim("/proc/sys/kernel/random/boot_id"), uptime()
	}
	if l.Collect != nil {
		inv := l.Collect()
		hb.Inventory = &inv
	}
	if l.Commands != nil {
		hb.Command = l.Commands.Status()
	}
	boundReport(&hb)
	r, err = l.Controller.Heartbeat(ctx, hb)
	if err != nil {
		return r, false, err
	}
	switch {
	case l.Commands != nil:
		firstOutcome = l.Commands.Reply(ctx, hb.Command, r.Command)
	case r.Command != nil:
		l.Log.Warn("the controller handed out a command, but this agent runs none", "command", r.Command.ID, "kind", r.Command.Kind)
	}
	return r, firstOutcome, nil
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
