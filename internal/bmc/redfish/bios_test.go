package redfish

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// TestBIOSDialects drives BIOS settings and Secure Boot through every
// dialect of the simulator: the registry found (sushy-tools' through its
// registry file's Location), values written to the settings object the
// Bios links (or, unlinked, AMI's SD), pending until a reset and applied
// by it; a second write of the same values sends nothing (iDRAC refuses
// a PATCH while its job is scheduled); sushy-tools applies at once;
// Secure Boot set, current after the reset, refused in Legacy mode.
func TestBIOSDialects(t *testing.T) {
	for _, d := range append([]sim.Dialect{sim.DialectStandard, sim.DialectSushy}, sim.VendorDialects...) {
		name := string(d)
		if name == "" {
			name = "standard"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startFleet(t, sim.Options{Systems: 1, Dialect: d, Tweak: quick})
			sys := f.SystemIDs()[0]
			c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
			ctx := context.Background()
			sushy := d == sim.DialectSushy

			attrs, err := c.BIOSAttributes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if attrs["ProcTurboMode"] != "Enabled" || attrs["BootMode"] == "" {
				t.Fatalf("attributes %v", attrs)
			}
			reg, err := c.BIOSRegistry(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if a := reg["ProcTurboMode"]; a.Type != bmc.BIOSEnumeration || strings.Join(a.Values, ",") != "Enabled,Disabled" {
				t.Fatalf("registry %v", reg)
			}

			want := bmc.BIOSValues{"ProcTurboMode": "Disabled"}
			if !sushy {
				want["NumaNodesPerSocket"] = "2"
				want["MemTest"] = "true"
				if a := reg["NumaNodesPerSocket"]; a.Type != bmc.BIOSInteger || *a.LowerBound != 1 || *a.UpperBound != 4 {
					t.Fatalf("NumaNodesPerSocket %+v", a)
				}
			}
			reset, err := c.SetBIOS(ctx, want)
			if err != nil {
				t.Fatal(err)
			}
			if reset == sushy {
				t.Fatalf("needs a reset: %v (sushy-tools applies at once)", reset)
			}
			if sushy {
				if got, _, _ := f.BIOS(sys); got["ProcTurboMode"] != "Disabled" {
					t.Fatalf("sushy-tools: %v", got)
				}
			} else {
				pending, err := c.PendingBIOS(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(pending) != 3 || pending["NumaNodesPerSocket"] != "2" || pending["MemTest"] != "true" {
					t.Fatalf("pending %v", pending)
				}
				if reset, err := c.SetBIOS(ctx, want); err != nil || !reset {
					t.Fatalf("the same values again: reset %v, %v", reset, err)
				}
				_, p, _ := f.BIOS(sys)
				if len(p) != 3 {
					t.Fatalf("pending after the second write: %v", p)
				}
				if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
					t.Fatal(err)
				}
				mustPower(t, c, bmc.PowerOn)
			}
			attrs, err = c.BIOSAttributes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range want {
				if attrs[k] != v {
					t.Fatalf("after the reset %s=%q, want %q", k, attrs[k], v)
				}
			}
			if pending, err := c.PendingBIOS(ctx); err != nil || len(pending) != 0 {
				t.Fatalf("pending after the reset: %v %v", pending, err)
			}
			if reset, err := c.SetBIOS(ctx, want); err != nil || reset {
				t.Fatalf("values in effect: reset %v, %v", reset, err)
			}

			// Secure Boot.
			legacy := sim.DialectQuirks(d).BootMode == "Legacy"
			reset, err = c.SetSecureBoot(ctx, true)
			if legacy {
				wantKind(t, err, bmc.KindRefused)
				if !strings.Contains(err.Error(), "SecureBootEnable=true") {
					t.Fatalf("unclear: %v", err)
				}
				return
			}
			if err != nil || !reset {
				t.Fatalf("SetSecureBoot: reset %v, %v", reset, err)
			}
			st, err := c.SecureBoot(ctx)
			if err != nil || !st.Enabled || st.Current == nil || *st.Current {
				t.Fatalf("before the reset: %+v %v", st, err)
			}
			if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
				t.Fatal(err)
			}
			if st, err = c.SecureBoot(ctx); err != nil || !st.Enabled || st.Current == nil || !*st.Current {
				t.Fatalf("after the reset: %+v %v", st, err)
			}
			if reset, err := c.SetSecureBoot(ctx, true); err != nil || reset {
				t.Fatalf("set again: reset %v, %v", reset, err)
			}
		})
	}
}

// A BMC that serves no registry: BIOSRegistry is nil, values convert by
// the type of the value in effect, and what the BMC refuses (400) is
// KindRefused naming the attribute.
func TestBIOSWithoutRegistry(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) { q.BIOS.NoRegistry = true }})
	sys := f.SystemIDs()[0]
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	ctx := context.Background()
	reg, err := c.BIOSRegistry(ctx)
	if err != nil || reg != nil {
		t.Fatalf("registry %v, %v; want nil, nil", reg, err)
	}
	if _, err := c.SetBIOS(ctx, bmc.BIOSValues{"NumaNodesPerSocket": "3", "MemTest": "true", "AssetTag": "r7"}); err != nil {
		t.Fatal(err)
	}
	if _, p, _ := f.BIOS(sys); p["NumaNodesPerSocket"] != int64(3) || p["MemTest"] != true || p["AssetTag"] != "r7" {
		t.Fatalf("pending %v", p)
	}
	// The type of the value in effect: a boolean.
	_, err = c.SetBIOS(ctx, bmc.BIOSValues{"MemTest": "maybe"})
	wantKind(t, err, bmc.KindRefused)
	if !strings.Contains(err.Error(), "MemTest") {
		t.Fatalf("the attribute is not named: %v", err)
	}
	// Out of bounds: only the BMC knows, and says so.
	_, err = c.SetBIOS(ctx, bmc.BIOSValues{"NumaNodesPerSocket": "9"})
	wantKind(t, err, bmc.KindRefused)
	if !strings.Contains(err.Error(), "the BMC refused NumaNodesPerSocket") || !strings.Contains(err.Error(), "PropertyValueOutOfRange") {
		t.Fatalf("unclear: %v", err)
	}
	_, err = c.SetBIOS(ctx, bmc.BIOSValues{"NoSuchAttribute": "1"})
	wantKind(t, err, bmc.KindRefused)
}

// With a registry, values it does not allow are refused before anything
// is sent.
func TestBIOSRegistryChecks(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	sys := f.SystemIDs()[0]
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	for values, want := range map[string]bmc.BIOSValues{
		"ProcVirtualization":                          {"ProcVirtualization": "Maybe"},
		"NumaNodesPerSocket=9":                        {"NumaNodesPerSocket": "9"},
		"not an integer":                              {"NumaNodesPerSocket": "two"},
		"BiosVersion is read-only":                    {"BiosVersion": "2"},
		"AssetTag is 40":                              {"AssetTag": strings.Repeat("x", 40)},
		"Nope is not in the BMC's attribute registry": {"Nope": "1"},
	} {
		_, err := c.SetBIOS(context.Background(), want)
		wantKind(t, err, bmc.KindRefused)
		if !strings.Contains(err.Error(), values) {
			t.Fatalf("%v: %v does not say %q", want, err, values)
		}
	}
	if _, p, _ := f.BIOS(sys); len(p) != 0 {
		t.Fatalf("pending after refusals: %v", p)
	}
}

// A value the BMC accepts (2xx) and silently drops is found by the
// read-back and named.
func TestBIOSValueDropped(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) { q.BIOS.Drops = []string{"SriovGlobalEnable"} }})
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	_, err := c.SetBIOS(context.Background(), bmc.BIOSValues{"SriovGlobalEnable": "Enabled", "LogicalProc": "Disabled"})
	wantKind(t, err, bmc.KindRefused)
	if msg := err.Error(); !strings.Contains(msg, "SriovGlobalEnable=Enabled (shows nothing pending, in effect Disabled)") || strings.Contains(msg, "LogicalProc=") {
		t.Fatalf("unclear: %v", err)
	}
}

// A system without Bios or SecureBoot: KindUnsupported naming what is
// missing.
func TestBIOSUnsupported(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) { q.BIOS.None, q.BIOS.NoSecureBoot = true, true }})
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	ctx := context.Background()
	_, err := c.BIOSAttributes(ctx)
	wantKind(t, err, bmc.KindUnsupported)
	if !strings.Contains(err.Error(), "has no Bios resource") {
		t.Fatalf("unclear: %v", err)
	}
	_, err = c.SetBIOS(ctx, bmc.BIOSValues{"MemTest": "true"})
	wantKind(t, err, bmc.KindUnsupported)
	_, err = c.SetSecureBoot(ctx, true)
	wantKind(t, err, bmc.KindUnsupported)
	if !strings.Contains(err.Error(), "has no SecureBoot resource") {
		t.Fatalf("unclear: %v", err)
	}
	// Through Drivers, as the controller holds it.
	g, err := bmc.Drivers{"redfish": newOpener(t, Options{})}.Open(ctx, endpoint(f.URL(), ""))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bmc.Capability[bmc.BIOSSettings](g)
	if err != nil {
		t.Fatalf("the redfish driver has the capability: %v", err)
	}
	_, err = b.PendingBIOS(ctx)
	wantKind(t, err, bmc.KindUnsupported)
}

// Out-of-band changes (drift) read back as they are.
func TestBIOSOutOfBandChange(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	sys := f.SystemIDs()[0]
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	if err := f.SetBIOSAttribute(sys, "ProcVirtualization", "Disabled"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetSecureBoot(sys, true); err != nil {
		t.Fatal(err)
	}
	attrs, err := c.BIOSAttributes(context.Background())
	if err != nil || attrs["ProcVirtualization"] != "Disabled" {
		t.Fatalf("%v %v", attrs, err)
	}
	st, err := c.SecureBoot(context.Background())
	if err != nil || !st.Enabled || !*st.Current {
		t.Fatalf("%+v %v", st, err)
	}
	// Setting it back is pending until a reset, and needs one.
	reset, err := c.SetBIOS(context.Background(), bmc.BIOSValues{"ProcVirtualization": "Enabled"})
	if err != nil || !reset {
		t.Fatalf("reset %v, %v", reset, err)
	}
}

// TestBIOSRegistryReadOncePerBMC: a registry is read from the BMC once
// per name (its name changes with its content): the second read costs
// only the system and its Bios, and gives the same registry.
func TestBIOSRegistryReadOncePerBMC(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	ctx := context.Background()
	before := f.TotalRequests()
	first, err := c.BIOSRegistry(ctx)
	if err != nil || len(first) == 0 {
		t.Fatalf("registry %v, %v", first, err)
	}
	cost := f.TotalRequests() - before
	before = f.TotalRequests()
	second, err := c.BIOSRegistry(ctx)
	if err != nil || !reflect.DeepEqual(first, second) {
		t.Fatalf("second read: %v, %v", second, err)
	}
	if again := f.TotalRequests() - before; again >= cost || again > 2 { // the system and its Bios
		t.Fatalf("the second read made %d requests, the first %d: the registry is read again", again, cost)
	}
}
