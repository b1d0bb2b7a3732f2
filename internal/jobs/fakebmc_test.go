package jobs

import (
	"context"
	"errors"
	"sync"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// fakeBMCs is an in-memory bmc.Opener with the sim's fault vocabulary and
// no virtual media or inventory: it covers the PXE path that the sim (which
// always has virtual media) cannot.
type fakeBMCs struct {
	mu      sync.Mutex
	systems map[string]*fakeSystem
	// media gives the systems virtual media: a boot CD and a second slot
	// for the config drive (see fakeMediaClient).
	media bool
	// release, when set, also ends the calls of hung systems when it is
	// closed (as a BMC that finally resets the connection), so a test can
	// hold reads open for as long as it looks, independent of timeouts.
	release chan struct{}
}

type fakeSystem struct {
	cd, drive string // inserted images (media only)
	// driveFails makes InsertConfigDrive fail quoting the URL, as BMCs
	// that cannot fetch an image do.
	driveFails bool
	// refuseClear makes clearing the boot override fail as a BMC that
	// refuses every form of it does (KindRefused).
	refuseClear bool
	// mediaFails, when set, is the error InsertMedia returns.
	mediaFails error
	power      bool
	fault      sim.Fault
	flap       bool
	ignore     bool
	boot       bmc.BootDevice
	calls      int
}

func newFakeBMCs(ids ...string) *fakeBMCs {
	f := &fakeBMCs{systems: map[string]*fakeSystem{}}
	for _, id := range ids {
		f.systems[id] = &fakeSystem{}
	}
	return f
}

func (f *fakeBMCs) Open(_ context.Context, ep bmc.Endpoint) (bmc.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.systems[ep.SystemID]; !ok {
		return nil, bmc.Errorf(bmc.KindUnreachable, "open", "no system %q", ep.SystemID)
	}
	if f.media {
		return &fakeMediaClient{fakeClient{f: f, id: ep.SystemID}}, nil
	}
	return &fakeClient{f: f, id: ep.SystemID}, nil
}

type fakeClient struct {
	f  *fakeBMCs
	id string
}

// enter applies the system's fault to one call.
func (c *fakeClient) enter(ctx context.Context, op string) (*fakeSystem, error) {
	c.f.mu.Lock()
	s := c.f.systems[c.id]
	s.calls++
	fault := s.fault
	if fault == sim.FaultFlap {
		s.flap = !s.flap
		if s.flap {
			fault = sim.FaultDown
		} else {
			fault = sim.FaultNone
		}
	}
	c.f.mu.Unlock()
	switch fault {
	case sim.FaultDown:
		return nil, bmc.Errorf(bmc.KindUnreachable, op, "connection reset")
	case sim.FaultHang, sim.FaultSlow:
		select {
		case <-ctx.Done():
			return nil, bmc.Wrap(bmc.KindUnreachable, op, ctx.Err())
		case <-c.f.release: // nil (blocks forever) unless a test set it
			return nil, bmc.Errorf(bmc.KindUnreachable, op, "connection reset after a long silence")
		}
	case sim.FaultError:
		return nil, bmc.Errorf(bmc.KindBMCError, op, "500 internal error")
	case sim.FaultAuth:
		return nil, bmc.Errorf(bmc.KindAuth, op, "401 unauthorized")
	}
	return s, nil
}

func (c *fakeClient) PowerState(ctx context.Context) (bmc.PowerState, error) {
	s, err := c.enter(ctx, "power state")
	if err != nil {
		return "", err
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if s.power {
		return bmc.PowerOn, nil
	}
	return bmc.PowerOff, nil
}

func (c *fakeClient) SetPower(ctx context.Context, a bmc.PowerAction) error {
	s, err := c.enter(ctx, "set power")
	if err != nil {
		return err
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if !s.ignore {
		s.power = a.Target() == bmc.PowerOn
	}
	return nil
}

func (c *fakeClient) SetBootDevice(ctx context.Context, dev bmc.BootDevice, _ bool) error {
	s, err := c.enter(ctx, "boot device")
	if err != nil {
		return err
	}
	if dev == bmc.BootCD {
		return errors.New("fake has no virtual media")
	}
	c.f.mu.Lock()
	s.boot = dev
	c.f.mu.Unlock()
	return nil
}

var _ bmc.Client = (*fakeClient)(nil)

// fakeMediaClient adds virtual media: a boot CD and a config drive slot.
type fakeMediaClient struct{ fakeClient }

func (c *fakeMediaClient) SetBootDevice(ctx context.Context, dev bmc.BootDevice, _ bool) error {
	s, err := c.enter(ctx, "boot device")
	if err != nil {
		return err
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if dev == bmc.BootNone && s.refuseClear {
		return bmc.Errorf(bmc.KindRefused, "set boot device",
			"clearing the boot override: the BMC refused Boot.BootSourceOverrideEnabled=Disabled: HTTP 400 Bad Request: Missing the BootSourceOverrideTarget")
	}
	s.boot = dev
	return nil
}

func (c *fakeMediaClient) InsertMedia(ctx context.Context, url string) error {
	s, err := c.enter(ctx, "insert media")
	if err != nil {
		return err
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if s.mediaFails != nil {
		return s.mediaFails
	}
	s.cd = url
	return nil
}

func (c *fakeMediaClient) InsertConfigDrive(ctx context.Context, url string) error {
	s, err := c.enter(ctx, "insert config drive")
	if err != nil {
		return err
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if s.driveFails {
		return bmc.Errorf(bmc.KindBMCError, "insert config drive", "400 CouldNotEstablishConnection: the image at %s could not be fetched", url)
	}
	s.drive = url
	return nil
}

func (c *fakeMediaClient) EjectMedia(ctx context.Context) error {
	s, err := c.enter(ctx, "eject media")
	if err != nil {
		return err
	}
	c.f.mu.Lock()
	s.cd, s.drive = "", ""
	c.f.mu.Unlock()
	return nil
}

var (
	_ bmc.VirtualMedia     = (*fakeMediaClient)(nil)
	_ bmc.ConfigDriveMedia = (*fakeMediaClient)(nil)
)

// bmcCtl of the fake, with the sim's signatures.

func (f *fakeBMCs) SetFault(system string, fault sim.Fault) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.systems[system].fault = fault
	return nil
}

func (f *fakeBMCs) SetIgnorePower(system string, ignore bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.systems[system].ignore = ignore
	return nil
}

func (f *fakeBMCs) Power(system string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.systems[system].power {
		return "On", nil
	}
	return "Off", nil
}

func (f *fakeBMCs) SetPower(system string, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.systems[system].power = on
	return nil
}
