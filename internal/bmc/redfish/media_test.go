package redfish

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// mediaWrites fronts a fleet and counts the requests that change virtual
// media (anything but GET under .../VirtualMedia/). rejectParams makes
// inserts that carry WriteProtected or Inserted fail, as some BMCs do.
type mediaWrites struct {
	*httptest.Server
	n            atomic.Int64
	rejectParams bool
}

func frontFleet(t *testing.T, f *sim.Fleet) *mediaWrites {
	t.Helper()
	m := &mediaWrites{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/VirtualMedia/") {
			m.n.Add(1)
			if m.rejectParams && strings.HasSuffix(r.URL.Path, "InsertMedia") {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte("WriteProtected")) || bytes.Contains(body, []byte("Inserted")) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = io.WriteString(w, `{"error":{"code":"Base.1.8.GeneralError","message":"x","@Message.ExtendedInfo":[{"MessageId":"Base.1.8.ActionParameterNotSupported","Message":"The parameter WriteProtected is not supported."}]}}`)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		f.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// driveURLs serves one config drive ISO at every path, so each test can
// use several distinct image URLs.
func driveURLs(t *testing.T) string {
	t.Helper()
	var iso bytes.Buffer
	if err := configdrive.Build(&iso, configdrive.Drive{UUID: "u-1", ReadyURL: "http://127.0.0.1:1/ready", ReadyToken: "t"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(iso.Bytes()) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

func slotImage(t *testing.T, f *sim.Fleet, slot string) string {
	t.Helper()
	img, in, err := f.SlotMedia("1", slot)
	if err != nil {
		t.Fatal(err)
	}
	if in != (img != "") {
		t.Fatalf("slot %s: image %q inserted=%v", slot, img, in)
	}
	return img
}

func TestConfigDriveGoesToUSB(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	front := frontFleet(t, f)
	drives := driveURLs(t)
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(front.URL, "1"))
	ctx := context.Background()
	const boot = "http://images.example/deploy.iso"

	if err := c.InsertMedia(ctx, boot); err != nil {
		t.Fatal(err)
	}
	a, b := drives+"/instance-a/config-2.iso", drives+"/instance-b/config-2.iso"
	if err := c.InsertConfigDrive(ctx, a); err != nil {
		t.Fatal(err)
	}
	if slotImage(t, f, "USB1") != a || slotImage(t, f, "CD") != boot {
		t.Fatalf("USB1 %q, CD %q", slotImage(t, f, "USB1"), slotImage(t, f, "CD"))
	}

	w := front.n.Load()
	if err := c.InsertConfigDrive(ctx, a); err != nil {
		t.Fatal(err)
	}
	if d := front.n.Load() - w; d != 0 {
		t.Fatalf("re-inserting the same config drive sent %d media requests", d)
	}

	// Another instance's drive: eject, then insert.
	if err := c.InsertConfigDrive(ctx, b); err != nil {
		t.Fatal(err)
	}
	if slotImage(t, f, "USB1") != b || slotImage(t, f, "CD") != boot {
		t.Fatalf("replacing the config drive went wrong: USB1 %q CD %q", slotImage(t, f, "USB1"), slotImage(t, f, "CD"))
	}
	if d := front.n.Load() - w; d != 2 {
		t.Fatalf("replacing the config drive sent %d media requests, want 2 (eject, insert)", d)
	}

	if err := c.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if slotImage(t, f, "USB1") != "" || slotImage(t, f, "CD") != "" {
		t.Fatal("EjectMedia left a slot inserted")
	}
	w = front.n.Load()
	if err := c.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if d := front.n.Load() - w; d != 0 {
		t.Fatalf("ejecting empty slots sent %d media requests", d)
	}
	wantKind(t, c.InsertConfigDrive(ctx, "not a url"), bmc.KindUnsupported)
}

func TestConfigDriveSingleCD(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, MediaSlots: []string{"CD"}})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(f.URL(), ""))
	ctx := context.Background()

	// The only slot is the boot CD: a config drive never goes there,
	// whether the boot image is in it yet or not (an AMI shows an insert
	// seconds late, so "empty" proves nothing).
	const drive = "https://controller.example/v1/configdrive/abc.iso"
	err := c.InsertConfigDrive(ctx, drive)
	wantKind(t, err, bmc.KindUnsupported)
	if !strings.Contains(err.Error(), "the BMC has one virtual media slot (CD), kept for the boot image") {
		t.Fatalf("message does not say what the BMC has: %v", err)
	}
	if slotImage(t, f, "CD") != "" {
		t.Fatal("the config drive went to the boot CD")
	}

	if err := c.InsertMedia(ctx, "http://images.example/deploy.iso"); err != nil {
		t.Fatal(err)
	}
	err = c.InsertConfigDrive(ctx, drive)
	wantKind(t, err, bmc.KindUnsupported)
	if slotImage(t, f, "CD") != "http://images.example/deploy.iso" {
		t.Fatal("the boot image was touched")
	}
}

// Slots known only by name, without Inserted; a BMC refusing the optional
// insert parameters.
func TestConfigDriveQuirkySlots(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, MediaSlots: []string{"Cd", "RemovableDisk"}})
	front := frontFleet(t, f)
	front.rejectParams = true
	drives := driveURLs(t)
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(front.URL, ""))
	ctx := context.Background()

	if err := c.InsertMedia(ctx, "http://images.example/deploy.iso"); err != nil {
		t.Fatal(err)
	}
	if err := c.InsertConfigDrive(ctx, drives+"/d.iso"); err != nil {
		t.Fatal(err)
	}
	if slotImage(t, f, "RemovableDisk") != drives+"/d.iso" || slotImage(t, f, "Cd") != "http://images.example/deploy.iso" {
		t.Fatal("config drive not in RemovableDisk")
	}
	w := front.n.Load()
	if err := c.InsertConfigDrive(ctx, drives+"/d.iso"); err != nil {
		t.Fatal(err)
	}
	if front.n.Load() != w {
		t.Fatal("a slot without Inserted but with the image was not recognized")
	}
	if err := c.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if slotImage(t, f, "RemovableDisk") != "" || slotImage(t, f, "Cd") != "" {
		t.Fatal("EjectMedia left a slot inserted")
	}
}

func TestConfigDriveErrors(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	o := newOpener(t, Options{Timeout: 2 * time.Second})
	c := open(t, o, endpoint(f.URL(), "1"))
	ctx := context.Background()

	// The BMC cannot fetch the image: its message says so, without the
	// password in the URL.
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := strings.Replace(gone.URL, "://", "://admin:"+testPassword+"@", 1)
	gone.Close()
	err := c.InsertConfigDrive(ctx, goneURL+"/d.iso")
	wantKind(t, err, bmc.KindBMCError)
	if !strings.Contains(err.Error(), "could not be fetched") {
		t.Fatalf("fetch failure not named: %v", err)
	}

	// A hung BMC: the context deadline wins.
	_ = f.SetFault("1", sim.FaultHang)
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	wantKind(t, c.InsertConfigDrive(dctx, "http://x.example/d.iso"), bmc.KindUnreachable)
	wantKind(t, c.EjectMedia(dctx), bmc.KindUnreachable)
}

func TestConfigDriveSlotChoice(t *testing.T) {
	yes, no := true, false
	slot := func(id string, img string, in *bool, types ...string) *mediaSlot {
		return &mediaSlot{ID: id, Path: "/redfish/v1/Managers/1/VirtualMedia/" + id, MediaTypes: types, Image: img, Inserted: in}
	}
	const want = "http://c/d.iso"
	for _, tc := range []struct {
		name string
		vms  []*mediaSlot
		pick string // "" = unsupported
		done bool
	}{
		{"USB before floppy and CD2", []*mediaSlot{
			slot("CD", "boot", &yes, "CD", "DVD"), slot("CD2", "", &no, "CD"), slot("Floppy", "", &no, "Floppy"), slot("USB", "", &no, "USBStick"),
		}, "USB", false},
		{"floppy before CD2", []*mediaSlot{
			slot("CD", "boot", &yes, "CD", "DVD"), slot("CD2", "", &no, "CD"), slot("Floppy", "", &no, "Floppy"),
		}, "Floppy", false},
		{"iLO-style floppy/USB slot", []*mediaSlot{
			slot("1", "", &no, "Floppy", "USBStick"), slot("2", "", &no, "CD", "DVD"),
		}, "1", false},
		{"empty USB before one of ours to eject", []*mediaSlot{
			slot("CD", "", &no, "CD"), slot("USB1", "http://c/ours/old.iso", &yes, "USBStick"), slot("USB2", "", &no, "USBStick"),
		}, "USB2", false},
		{"our own old drive is replaced", []*mediaSlot{
			slot("CD", "boot", &yes, "CD"), slot("USB1", "http://c/ours/old.iso", &yes, "USBStick"),
		}, "USB1", false},
		{"an operator's image is never evicted", []*mediaSlot{
			slot("CD", "", &no, "CD"), slot("USB1", "old", &yes, "USBStick"),
		}, "", false},
		{"an XCC's occupied floppy is left for the free USB", []*mediaSlot{
			slot("CD1", "", &no, "CD", "DVD"), slot("Floppy1", "http://files/driver.img", &yes, "Floppy"), slot("USB1", "", &no, "USBStick"),
		}, "USB1", false},
		{"second CD, never the empty boot CD", []*mediaSlot{
			slot("CD1", "", &no, "CD"), slot("CD2", "", &no, "DVD"),
		}, "CD2", false},
		{"names only", []*mediaSlot{
			slot("VirtualCD", "boot", nil), slot("RemovableDisk", "", nil),
		}, "RemovableDisk", false},
		{"already in a slot", []*mediaSlot{
			slot("CD", "boot", &yes, "CD"), slot("USB", want, &yes, "USBStick"),
		}, "USB", true},
		{"only a hard drive slot besides the boot CD", []*mediaSlot{
			slot("CD", "boot", &yes, "CD"), slot("HDD", "", &no, "HardDrive"),
		}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owns := func(v *mediaSlot) bool { return strings.Contains(v.Image, "/ours/") }
			v, done, err := configDriveSlot(tc.vms, want, owns)
			if tc.pick == "" {
				if err == nil || bmc.KindOf(err) != bmc.KindUnsupported {
					t.Fatalf("want unsupported, got %v %v", v, err)
				}
				t.Log(err)
				return
			}
			if err != nil || v.ID != tc.pick || done != tc.done {
				t.Fatalf("picked %v done=%v err=%v, want %s done=%v", v, done, err, tc.pick, tc.done)
			}
		})
	}
}
