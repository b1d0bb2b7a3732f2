package bmc

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// echoDriver has every capability, and each of its calls fails quoting
// what it was sent in the spellings BMCs use, unclassified and
// unredacted, as a careless driver would.
type echoDriver struct{ msg string }

func (d echoDriver) Open(context.Context, Endpoint) (Client, error) { return echoClient(d), nil }

type echoClient struct{ msg string }

func (c echoClient) fail() error { return fmt.Errorf("HTTP 400: %s", c.msg) }

func (c echoClient) PowerState(context.Context) (PowerState, error)        { return PowerUnknown, c.fail() }
func (c echoClient) SetPower(context.Context, PowerAction) error           { return c.fail() }
func (c echoClient) SetBootDevice(context.Context, BootDevice, bool) error { return c.fail() }
func (c echoClient) InsertMedia(context.Context, string) error             { return c.fail() }
func (c echoClient) EjectMedia(context.Context) error                      { return c.fail() }
func (c echoClient) InsertConfigDrive(context.Context, string) error       { return c.fail() }
func (c echoClient) Inventory(context.Context) (Inventory, error)          { return Inventory{}, c.fail() }
func (c echoClient) SystemUUID(context.Context) (string, error)            { return "", c.fail() }
func (c echoClient) BootMode(context.Context) (string, error)              { return "", c.fail() }
func (c echoClient) ResolveSystem(context.Context) (ResolvedSystem, error) {
	return ResolvedSystem{}, c.fail()
}

// bareClient has the three calls every driver has, and no capability.
type bareClient struct{}

func (bareClient) PowerState(context.Context) (PowerState, error)        { return PowerOn, nil }
func (bareClient) SetPower(context.Context, PowerAction) error           { return nil }
func (bareClient) SetBootDevice(context.Context, BootDevice, bool) error { return nil }

type bareDriver struct{}

func (bareDriver) Open(context.Context, Endpoint) (Client, error) { return bareClient{}, nil }

// Every call of a client Drivers opens, of every capability, fails with
// the password (in every spelling), the Basic credentials and the agent
// boot key hidden, classified (the driver did not) and capped: no caller
// has to redact a BMC error again.
func TestDriversRedactEveryCall(t *testing.T) {
	t.Parallel()
	const pw = `pw<Sess>&"x\ 9%/+`
	token, _ := baremetal.NewAgentToken()
	key := baremetal.AgentBootKey(token)
	basic := base64.StdEncoding.EncodeToString([]byte("root:" + pw))
	msg := fmt.Sprintf(`{"Password":%q} Authorization: Basic %s form Password=%s iso %s %s`, pw, basic, url.QueryEscape(pw),
		url.QueryEscape("https://ctl"+api.AgentBootPath("6f1c2d3e-0000-4000-8000-00000000abcd", key)), strings.Repeat("padding ", 100))
	ctx := context.Background()
	c, err := Drivers{"redfish": echoDriver{msg}}.Open(ctx, Endpoint{Driver: "redfish", Username: "root", Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"power state":     func() error { _, err := c.PowerState(ctx); return err },
		"set power on":    func() error { return c.SetPower(ctx, ActionOn) },
		"set boot device": func() error { return c.SetBootDevice(ctx, BootCD, false) },
		"insert media": func() error {
			vm, err := Capability[VirtualMedia](c)
			if err != nil {
				return err
			}
			return vm.InsertMedia(ctx, "x")
		},
		"eject media": func() error {
			vm, err := Capability[VirtualMedia](c)
			if err != nil {
				return err
			}
			return vm.EjectMedia(ctx)
		},
		"insert config drive": func() error {
			cd, err := Capability[ConfigDriveMedia](c)
			if err != nil {
				return err
			}
			return cd.InsertConfigDrive(ctx, "x")
		},
		"inventory": func() error {
			g, err := Capability[InventoryGetter](c)
			if err != nil {
				return err
			}
			_, err = g.Inventory(ctx)
			return err
		},
		"system uuid": func() error {
			g, err := Capability[SystemUUIDGetter](c)
			if err != nil {
				return err
			}
			_, err = g.SystemUUID(ctx)
			return err
		},
		"boot mode": func() error {
			g, err := Capability[BootModeGetter](c)
			if err != nil {
				return err
			}
			_, err = g.BootMode(ctx)
			return err
		},
		"resolve system": func() error {
			g, err := Capability[SystemResolver](c)
			if err != nil {
				return err
			}
			_, err = g.ResolveSystem(ctx)
			return err
		},
	}
	for op, call := range calls {
		err := call()
		var be *Error
		if !errors.As(err, &be) || be.Kind != KindUnreachable || be.Op != op {
			t.Errorf("%s: %#v, want a classified error of op %q", op, err, op)
			continue
		}
		got := err.Error()
		for _, secret := range []string{pw, url.QueryEscape(pw), basic, key} {
			if strings.Contains(got, secret) {
				t.Errorf("%s: %q shown in %s", op, secret, got)
			}
		}
		if !strings.Contains(got, "HTTP 400: ") || len(be.Err.Error()) > MaxMessage {
			t.Errorf("%s: %q (%d bytes): the useful part lost, or not capped", op, got, len(be.Err.Error()))
		}
	}
}

// A capability is checked, not asserted: Capability says which driver
// lacks which capability (KindUnsupported, without calling the BMC), and
// hands out the driver's own where it has one, its errors redacted too.
func TestCapability(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bare, err := Drivers{"ipmi": bareDriver{}}.Open(ctx, Endpoint{Driver: "ipmi"})
	if err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func() error{
		"virtual media": func() error { _, err := Capability[VirtualMedia](bare); return err },
		"second virtual media slot (config drive)": func() error { _, err := Capability[ConfigDriveMedia](bare); return err },
		"inventory":         func() error { _, err := Capability[InventoryGetter](bare); return err },
		"system UUID":       func() error { _, err := Capability[SystemUUIDGetter](bare); return err },
		"boot mode":         func() error { _, err := Capability[BootModeGetter](bare); return err },
		"system resolution": func() error { _, err := Capability[SystemResolver](bare); return err },
	} {
		err := check()
		if KindOf(err) != KindUnsupported || err.Error() != "bmc "+name+": unsupported: the ipmi driver has no "+name {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The client still has every method (it is the boundary's): a type
	// assertion holds, and the call says what Capability would have.
	if vm, ok := bare.(VirtualMedia); !ok || KindOf(vm.InsertMedia(ctx, "x")) != KindUnsupported {
		t.Errorf("a capability the driver lacks, called anyway: %v", ok)
	}
	// A client not opened through Drivers is asked directly.
	if _, err := Capability[VirtualMedia](bareClient{}); KindOf(err) != KindUnsupported || !strings.Contains(err.Error(), "the BMC driver has no virtual media") {
		t.Errorf("bare client: %v", err)
	}
	if _, err := Capability[VirtualMedia](echoClient{}); err != nil {
		t.Errorf("a driver's own capability: %v", err)
	}
	// An unknown driver and a failed open are errors of the boundary too.
	if _, err := (Drivers{}).Open(ctx, Endpoint{Driver: "smash"}); KindOf(err) != KindUnsupported {
		t.Errorf("unknown driver: %v", err)
	}
}
