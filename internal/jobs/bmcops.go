package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// endpoint is what the driver needs to reach n's BMC.
func endpoint(n *baremetal.Node) bmc.Endpoint {
	return bmc.Endpoint{
		Driver:      string(n.Driver),
		Address:     n.BMC.Address,
		Username:    n.BMC.Username,
		Password:    n.BMC.Password,
		Insecure:    n.BMC.Insecure,
		SystemID:    n.BMC.SystemID,
		CipherSuite: n.BMC.CipherSuite,
	}
}

// nodeSecrets is what must never be shown of n's BMC credentials: the
// password and the Basic credentials it makes with the user name.
func nodeSecrets(n *baremetal.Node) *redact.Secrets {
	return redact.New(n.BMC.Password, redact.Basic(n.BMC.Username, n.BMC.Password))
}

// bmcCall runs one BMC operation on n under BMCTimeout, opening (or
// reusing, the Opener caches) the client first. Every BMC call of the
// package goes through here, so every one is bounded, classified and
// counted. Its errors are redacted already: Config.BMC is the
// controller's bmc.Drivers, which redacts every error it hands out.
func (r *nodeWork) bmcCall(ctx context.Context, n *baremetal.Node, op string, fn func(ctx context.Context, c bmc.Client) error) error {
	return r.bmcCallWithin(ctx, n, op, r.cfg.BMCTimeout, fn)
}

// mediaCall is bmcCall for a virtual media call: several requests, read
// back until the BMC shows the change (Config.mediaTimeout).
func (r *nodeWork) mediaCall(ctx context.Context, n *baremetal.Node, op string, fn func(ctx context.Context, c bmc.Client) error) error {
	return r.bmcCallWithin(ctx, n, op, r.cfg.mediaTimeout(), fn)
}

func (r *nodeWork) bmcCallWithin(ctx context.Context, n *baremetal.Node, op string, timeout time.Duration, fn func(ctx context.Context, c bmc.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	c, err := r.cfg.BMC.Open(ctx, endpoint(n))
	if err == nil {
		err = fn(ctx, c)
	}
	if err != nil {
		err = bmc.Wrap(bmc.KindUnreachable, op, err)
		// A deadline hit inside the driver may come back unclassified or
		// as a bare context error; either way it is an unreachable BMC.
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = &bmc.Error{Kind: bmc.KindUnreachable, Op: op, Err: fmt.Errorf("no answer within %s", timeout)}
		}
	}
	r.metrics.observeBMC(string(n.Driver), op, started, err)
	return err
}

func (r *nodeWork) readPower(ctx context.Context, n *baremetal.Node) (bmc.PowerState, error) {
	var ps bmc.PowerState
	err := r.bmcCall(ctx, n, "power state", func(ctx context.Context, c bmc.Client) error {
		var err error
		ps, err = c.PowerState(ctx)
		return err
	})
	return ps, err
}

func (r *nodeWork) setPower(ctx context.Context, n *baremetal.Node, a bmc.PowerAction) error {
	return r.bmcCall(ctx, n, "set power "+string(a), func(ctx context.Context, c bmc.Client) error {
		return c.SetPower(ctx, a)
	})
}

// errPowerTimeout: the BMC accepted a power change that was not observed
// within PowerChangeTimeout.
var errPowerTimeout = errors.New("power change not observed")

// powerTimeoutError says what was wanted and what was seen.
type powerTimeoutError struct {
	want, last bmc.PowerState
	after      time.Duration
}

func (e *powerTimeoutError) Error() string {
	return fmt.Sprintf("power %s not observed within %s (last observed %s)", e.want, baremetal.HumanDuration(e.after), e.last)
}

func (e *powerTimeoutError) Unwrap() error { return errPowerTimeout }

// transientPollErrors is how many consecutive failed reads a power wait
// tolerates: a BMC busy applying a power change often drops a request.
const transientPollErrors = 3

// waitPower polls n's power state until it is want or PowerChangeTimeout
// passes. It returns a *powerTimeoutError on timeout, the BMC error after
// transientPollErrors consecutive failed reads, and ctx's error when the
// job is stopped. stop, when not nil, is asked between polls whether to
// give up (e.g. the node left the state the job works on).
func (r *nodeWork) waitPower(ctx context.Context, n *baremetal.Node, want bmc.PowerState, stop func(context.Context) bool) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(r.cfg.PowerChangeTimeout)
	last := bmc.PowerUnknown
	fails := 0
	for {
		ps, err := r.readPower(ctx, n)
		switch {
		case err == nil:
			fails = 0
			last = ps
			if ps == want {
				return time.Since(start), nil
			}
		case ctx.Err() != nil:
			return 0, ctx.Err()
		default:
			fails++
			if fails >= transientPollErrors {
				return 0, err
			}
		}
		if !time.Now().Before(deadline) {
			return 0, &powerTimeoutError{want: want, last: last, after: r.cfg.PowerChangeTimeout}
		}
		if err := sleep(ctx, min(r.cfg.PowerPollInterval, time.Until(deadline))); err != nil {
			return 0, err
		}
		if stop != nil && stop(ctx) {
			return 0, errStopped
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errStopped: the node moved on (e.g. its instance was deleted mid-deploy)
// and the job gave up on purpose.
var errStopped = errors.New("node moved on; job stopped")

// isBMCErr reports whether err came from a BMC call (as opposed to the
// database or the job's own context).
func isBMCErr(err error) bool {
	var be *bmc.Error
	return errors.As(err, &be)
}
