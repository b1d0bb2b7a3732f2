package ipmi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/google/uuid"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Defaults for Options.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultIdleTimeout = 5 * time.Minute
	// closeTimeout bounds the Close Session sent when a session ends.
	closeTimeout = time.Second
)

// Options configure an Opener. The zero value is usable.
type Options struct {
	// Timeout bounds every call (connecting included) when the caller's
	// context has no earlier deadline. Default 10 s.
	Timeout time.Duration
	// Logger receives debug records of sessions and cipher-suite choices,
	// and warnings when a session breaks. Never credentials. Default: discard.
	Logger *slog.Logger
	// IdleTimeout closes a BMC's session after this long without a call,
	// releasing one of the BMC's few session slots. Default 5 min.
	IdleTimeout time.Duration
	// CipherSuites is the automatic search order; IDs go-ipmi does not
	// know are left out. Default DefaultCipherSuites.
	CipherSuites []int
}

// Opener is the IPMI (RMCP+, "lanplus") driver. It keeps one session per
// BMC address, used by one call at a time, and remembers per address the
// cipher suite that worked. Close it to end the sessions.
type Opener struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	conns  map[string]*bmcConn            // by target.key()
	suites map[string]types.CipherSuiteID // learned, by target.key()
	closed bool

	stop     chan struct{}
	reaperWG sync.WaitGroup

	// attempts counts connection attempts (one per cipher suite tried);
	// tests use it to see that a learned suite is not searched again.
	attempts atomic.Int64
}

var _ bmc.Opener = (*Opener)(nil)

// NewOpener returns an IPMI driver.
func NewOpener(opts Options) *Opener {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	var suites []int
	for _, s := range opts.CipherSuites {
		if _, _, _, ok := types.GetCipherSuiteAlgorithms(types.CipherSuiteID(s)); ok && s > 0 && s < 256 {
			suites = append(suites, s)
		}
	}
	if len(suites) == 0 {
		suites = slices.Clone(DefaultCipherSuites)
	}
	opts.CipherSuites = suites
	o := &Opener{
		opts:   opts,
		log:    opts.Logger,
		conns:  make(map[string]*bmcConn),
		suites: make(map[string]types.CipherSuiteID),
		stop:   make(chan struct{}),
	}
	o.reaperWG.Add(1)
	go o.reapIdle()
	return o
}

// Open validates the endpoint and returns its client. It does not talk to
// the BMC: the session is made by the first call and then reused.
func (o *Opener) Open(_ context.Context, ep bmc.Endpoint) (bmc.Client, error) {
	if ep.Driver != "" && ep.Driver != "ipmi" {
		return nil, bmc.Errorf(bmc.KindUnsupported, "open", "the IPMI driver cannot serve driver %q", ep.Driver)
	}
	t, err := parseAddress(ep.Address)
	if err != nil {
		return nil, bmc.Wrap(bmc.KindUnsupported, "open", err)
	}
	if ep.CipherSuite < 0 || ep.CipherSuite > 255 {
		return nil, bmc.Errorf(bmc.KindUnsupported, "open", "cipher suite %d is not a valid IPMI cipher suite ID", ep.CipherSuite)
	}
	if ep.CipherSuite != 0 {
		if _, _, _, ok := types.GetCipherSuiteAlgorithms(types.CipherSuiteID(ep.CipherSuite)); !ok {
			return nil, bmc.Errorf(bmc.KindUnsupported, "open", "cipher suite %d is not supported by this driver", ep.CipherSuite)
		}
	}
	// RMCP+ keys are at most 20 bytes; longer ones would be cut silently.
	if len(ep.Password) > 20 {
		return nil, bmc.Errorf(bmc.KindAuth, "open", "IPMI passwords are at most 20 bytes; this one is %d", len(ep.Password))
	}
	if len(ep.Username) > 16 {
		return nil, bmc.Errorf(bmc.KindAuth, "open", "IPMI user names are at most 16 bytes; %q is %d", ep.Username, len(ep.Username))
	}
	if o.isClosed() {
		return nil, bmc.Wrap(bmc.KindUnreachable, "open", errClosed)
	}
	return &Client{o: o, t: t, cr: creds{user: ep.Username, pass: ep.Password, suite: ep.CipherSuite}}, nil
}

// Close ends every session (waiting for calls in flight, which are bounded
// by their deadlines) and stops the idle reaper. Calls afterwards fail.
func (o *Opener) Close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	close(o.stop)
	conns := make([]*bmcConn, 0, len(o.conns))
	for _, c := range o.conns {
		conns = append(conns, c)
	}
	o.mu.Unlock()
	o.reaperWG.Wait()

	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			_ = c.lock(context.Background())
			defer c.unlock()
			if c.sess != nil {
				c.sess.close(closeTimeout)
				c.sess = nil
			}
		})
	}
	wg.Wait()
}

func (o *Opener) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// conn returns the per-BMC state for t, creating it on first use.
func (o *Opener) conn(t target) (*bmcConn, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, errClosed
	}
	c, ok := o.conns[t.key()]
	if !ok {
		c = &bmcConn{sem: make(chan struct{}, 1)}
		o.conns[t.key()] = c
	}
	return c, nil
}

// reapIdle closes sessions unused for IdleTimeout. A BMC has only a few
// session slots (often 4 to 16, shared with every other tool), and
// go-ipmi keeps an idle session alive forever.
func (o *Opener) reapIdle() {
	defer o.reaperWG.Done()
	tick := time.NewTicker(min(o.opts.IdleTimeout/2, 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-o.stop:
			return
		case now := <-tick.C:
			o.mu.Lock()
			conns := make([]*bmcConn, 0, len(o.conns))
			for _, c := range o.conns {
				conns = append(conns, c)
			}
			o.mu.Unlock()
			for _, c := range conns {
				if !c.tryLock() {
					continue // in use, so not idle
				}
				if c.sess != nil && now.Sub(c.lastUsed) >= o.opts.IdleTimeout {
					go c.sess.close(closeTimeout)
					c.sess = nil
				}
				c.unlock()
			}
		}
	}
}

// dropSessions closes every session but keeps learned cipher suites, as
// if each had expired. For tests.
func (o *Opener) dropSessions() {
	o.mu.Lock()
	conns := make([]*bmcConn, 0, len(o.conns))
	for _, c := range o.conns {
		conns = append(conns, c)
	}
	o.mu.Unlock()
	for _, c := range conns {
		_ = c.lock(context.Background())
		if c.sess != nil {
			c.sess.close(closeTimeout)
			c.sess = nil
		}
		c.unlock()
	}
}

// Client is one node's BMC, as returned by Opener.Open.
type Client struct {
	o  *Opener
	t  target
	cr creds
}

var (
	_ bmc.Client           = (*Client)(nil)
	_ bmc.SystemUUIDGetter = (*Client)(nil)
	_ bmc.VirtualMedia     = (*Client)(nil)
)

// do runs fn on this BMC's session, connecting first if need be, with the
// call bounded by Options.Timeout. If a reused session fails without an
// IPMI answer (it may have expired or the BMC restarted), the session is
// dropped and fn runs once more on a fresh one, time permitting. fn must
// be safe to repeat.
func (c *Client) do(ctx context.Context, op string, fn func(ctx context.Context, cli *ipmiclient.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.opts.Timeout)
	defer cancel()
	key := c.t.key()
	conn, err := c.o.conn(c.t)
	if err != nil {
		return bmc.Wrap(bmc.KindUnreachable, op, err)
	}
	if err := conn.lock(ctx); err != nil {
		return bmc.Errorf(bmc.KindUnreachable, op, "%s: still busy with an earlier call when this one ended: %w", key, err)
	}
	defer conn.unlock()
	if c.o.isClosed() { // Close ran while we waited: open nothing new
		return bmc.Wrap(bmc.KindUnreachable, op, errClosed)
	}

	if conn.sess != nil && conn.sess.creds != c.cr {
		go conn.sess.close(closeTimeout) // credentials changed: start afresh
		conn.sess = nil
	}
	for {
		fresh := conn.sess == nil
		if fresh {
			s, err := c.o.connect(ctx, c.t, c.cr)
			if err != nil {
				return withOp(op, err)
			}
			conn.sess = s
		}
		err := fn(ctx, conn.sess.cli)
		conn.lastUsed = time.Now()
		if err == nil {
			return nil
		}
		kind := classify(err)
		if !sessionSuspect(err) {
			return bmc.Wrap(kind, op, describe(key, err, c.cr.pass))
		}
		go conn.sess.close(closeTimeout)
		conn.sess = nil
		if fresh || ctx.Err() != nil {
			return bmc.Wrap(kind, op, describe(key, err, c.cr.pass))
		}
		c.o.log.LogAttrs(ctx, slog.LevelWarn, "ipmi session failed; reconnecting",
			slog.String("bmc", key), slog.String("op", op), slog.String("error", redact(err.Error(), c.cr.pass)))
	}
}

// withOp re-labels a classified error with the caller's operation, so a
// failed connect reads "bmc power state: auth: ...".
func withOp(op string, err error) error {
	var be *bmc.Error
	if errors.As(err, &be) {
		return &bmc.Error{Kind: be.Kind, Op: op, Err: be.Err}
	}
	return bmc.Wrap(bmc.KindUnreachable, op, err)
}

// PowerState reads the chassis power state (Get Chassis Status).
func (c *Client) PowerState(ctx context.Context) (bmc.PowerState, error) {
	var on bool
	err := c.do(ctx, "power state", func(ctx context.Context, cli *ipmiclient.Client) error {
		st, err := cli.GetChassisStatus(ctx)
		if err != nil {
			return err
		}
		on = st.PowerIsOn
		return nil
	})
	if err != nil {
		return bmc.PowerUnknown, err
	}
	if on {
		return bmc.PowerOn, nil
	}
	return bmc.PowerOff, nil
}

// SetPower sends a Chassis Control: on = power up, off = power down,
// soft_off = soft (ACPI) shutdown, reset = hard reset, or power up when
// the chassis is off (a reset of a machine that is off means "start it").
// An action the BMC refuses while the chassis is already in the action's
// target state counts as done.
func (c *Client) SetPower(ctx context.Context, action bmc.PowerAction) error {
	var ctl chassis.ChassisControl
	switch action {
	case bmc.ActionOn:
		ctl = chassis.ChassisControlPowerUp
	case bmc.ActionOff:
		ctl = chassis.ChassisControlPowerDown
	case bmc.ActionSoftOff:
		ctl = chassis.ChassisControlSoftShutdown
	case bmc.ActionReset:
		ctl = chassis.ChassisControlHardReset
	default:
		return bmc.Errorf(bmc.KindUnsupported, "power", "unknown power action %q", action)
	}
	return c.do(ctx, "power "+string(action), func(ctx context.Context, cli *ipmiclient.Client) error {
		if action == bmc.ActionReset {
			st, err := cli.GetChassisStatus(ctx)
			if err != nil {
				return err
			}
			if !st.PowerIsOn {
				ctl = chassis.ChassisControlPowerUp
			}
		}
		_, err := cli.ChassisControl(ctx, ctl)
		if _, isCC := completionCode(err); isCC && action != bmc.ActionReset {
			if st, serr := cli.GetChassisStatus(ctx); serr == nil && (st.PowerIsOn == (action.Target() == bmc.PowerOn)) {
				return nil
			}
		}
		return err
	})
}

// Boot flags (Set System Boot Options parameter 5) per device.
var bootSelectors = map[bmc.BootDevice]types.BootDeviceSelector{
	bmc.BootPXE:  types.BootDeviceSelectorForcePXE,
	bmc.BootCD:   types.BootDeviceSelectorForceCDROM,
	bmc.BootDisk: types.BootDeviceSelectorForceHardDrive,
	bmc.BootNone: types.BootDeviceSelectorNoOverride,
}

// SetBootDevice sets the boot override (Set System Boot Options): for the
// next boot only, or for all boots when persistent. BootNone clears it.
// The boot type is left "PC compatible" (the flag's zero value), as
// ipmitool does without options=efiboot; Endpoint has no boot mode yet.
func (c *Client) SetBootDevice(ctx context.Context, dev bmc.BootDevice, persistent bool) error {
	sel, ok := bootSelectors[dev]
	if !ok {
		return bmc.Errorf(bmc.KindUnsupported, "boot device", "unknown boot device %q", dev)
	}
	return c.do(ctx, "boot device", func(ctx context.Context, cli *ipmiclient.Client) error {
		// Keep the flags valid past the BMC's 60-second timeout, as
		// pyghmi (Ironic) does. Optional: not every BMC takes it.
		_ = cli.SetSystemBootOptionsParamFor(ctx, &types.BootOptionParam_BMCBootFlagValidBitClear{
			DontClearOnCommandReceivedTimeout: true,
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return cli.SetSystemBootOptionsParamFor(ctx, &types.BootOptionParam_BootFlags{
			BootFlagsValid:     dev != bmc.BootNone,
			Persist:            persistent && dev != bmc.BootNone,
			BootDeviceSelector: sel,
		})
	})
}

// SystemUUID reads the system GUID (Get System GUID) and formats its 16
// bytes as a UUID in the order the BMC sent them. The IPMI spec stores
// the fields least-significant byte first, which vendors implement in
// more than one way, so callers matching it against the machine's SMBIOS
// UUID try the orders in use (baremetal.NetbootUUIDs). A BMC without the
// command answers KindUnsupported.
func (c *Client) SystemUUID(ctx context.Context) (string, error) {
	var guid [16]byte
	err := c.do(ctx, "system guid", func(ctx context.Context, cli *ipmiclient.Client) error {
		res, err := cli.GetSystemGUID(ctx)
		if err != nil {
			return err
		}
		guid = res.GUID
		return nil
	})
	if err != nil {
		return "", err
	}
	return uuid.UUID(guid).String(), nil
}

// InsertMedia is not available over IPMI: virtual media is vendor
// specific (or Redfish). The error is permanent (KindUnsupported).
func (c *Client) InsertMedia(context.Context, string) error {
	return noMedia("insert media")
}

// EjectMedia is not available over IPMI; see InsertMedia.
func (c *Client) EjectMedia(context.Context) error {
	return noMedia("eject media")
}

// noMedia is bmc.ErrNoVirtualMedia, as the callers test it.
func noMedia(op string) error {
	return &bmc.Error{Kind: bmc.KindUnsupported, Op: op, Err: fmt.Errorf("%w: IPMI has no standard virtual media; use the redfish driver", bmc.ErrNoVirtualMedia)}
}
