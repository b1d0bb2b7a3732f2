// Regression tests of this round's second read of the driver: each failed
// on the driver it was written against.
package redfish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// HPE ProLiant (community.general#3509, fixed by #3581) and Dell
// 13G (community.general#5091, IDRAC.1.6.SYS410) refuse a Boot PATCH that
// carries BootSourceOverrideMode, even the value it already has. The
// driver now always echoes the mode: every boot override fails there.
func TestDriverBootModeNotWritable(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	front := frontWith(t, f, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, "/redfish/v1/Systems/1") &&
			bytes.Contains(body, []byte("BootSourceOverrideMode")) {
			redfishErr(w, http.StatusBadRequest, "iLO.2.15.PropertyNotWritableOrUnknown",
				"The property BootSourceOverrideMode is read-only or unknown.")
			return true
		}
		return false
	})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(front.URL, ""))
	if err := c.SetBootDevice(context.Background(), bmc.BootCD, false); err != nil {
		t.Fatalf("one-time CD boot on a BMC whose BootSourceOverrideMode is not writable: %v", err)
	}
	if target, _, _ := f.BootOverride("1"); target != "Cd" {
		t.Fatalf("override %s, want Cd", target)
	}
	if err := c.SetBootDevice(context.Background(), bmc.BootDisk, true); err != nil {
		t.Fatalf("persistent disk boot (image deploys' last step): %v", err)
	}
}

// A system whose Boot is writable only through its
// @Redfish.Settings object (patchBoot's own fallback; iDRAC 10 answers
// "The property Boot is a read-only property", community.general#11297).
// Settings there are pending until the next reset (SettingsApplyTime
// OnReset), so the System itself never shows them before the power action
// that follows: the read-back now fails every such override as refused.
func TestDriverBootOverrideViaSettingsObject(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	const settings = "/redfish/v1/Systems/1/Settings"
	var mu sync.Mutex
	pending := map[string]any{}
	front := frontWith(t, f, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		p := strings.TrimSuffix(r.URL.Path, "/")
		switch {
		case p == "/redfish/v1/Systems/1" && r.Method == http.MethodGet:
			rewriteGET(f, w, r, func(m map[string]any) {
				m["@Redfish.Settings"] = map[string]any{"SettingsObject": map[string]any{"@odata.id": settings}}
			})
			return true
		case p == "/redfish/v1/Systems/1" && r.Method == http.MethodPatch:
			redfishErr(w, http.StatusBadRequest, "Base.1.12.PropertyNotWritable",
				"The property Boot is a read-only property and cannot be assigned a value.")
			return true
		case p == settings && r.Method == http.MethodPatch:
			var m map[string]any
			_ = json.Unmarshal(body, &m)
			mu.Lock()
			for k, v := range m {
				pending[k] = v
			}
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return true
		case p == settings && r.Method == http.MethodGet:
			mu.Lock()
			doc := map[string]any{"@odata.id": settings}
			for k, v := range pending {
				doc[k] = v
			}
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(doc)
			return true
		}
		return false
	})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(front.URL, ""))
	err := c.SetBootDevice(context.Background(), bmc.BootPXE, false)
	if err != nil {
		t.Fatalf("the BMC took the override in its settings object (applied at the next reset), the driver says: %v", err)
	}
}

// SetPower now waits for a reset's task (up to taskTimeout, 2
// min), but every caller gives it bmcCall's 10 s. A BMC that answers 202
// and whose task takes longer than the caller's deadline (a graceful
// shutdown task ends when the OS is down) did accept the request and does
// carry it out, yet SetPower reports it unreachable (jobs: fault
// accounting, and the deploy's retry sends the reset again).
func TestDriverResetTaskOutlivesCallerDeadline(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) {
		q.TaskMonitor, q.TaskDelay = true, 2*time.Second
	}})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(f.URL(), ""))
	mustPower(t, c, bmc.PowerOff)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := c.SetPower(ctx, bmc.ActionOn)
	time.Sleep(2 * time.Second)
	p, _ := f.Power("1")
	t.Logf("SetPower: kind %s: %v; power afterwards %s", bmc.KindOf(err), err, p)
	if err != nil && bmc.KindOf(err) == bmc.KindUnreachable && p == "On" {
		t.Fatalf("the BMC accepted the reset (202) and carried it out, and SetPower reported it unreachable: %v", err)
	}
}

// One slot the BMC lists answers 404 (the other slots work):
// EjectMedia's error is KindUnsupported, which ejectMediaSupported reads
// as "this BMC has no virtual media" (mediaSupport.why): a live deploy
// then fails for good with noLiveMedia, an agent boot silently goes to the
// network, though InsertMedia works on the very same BMC.
func TestDriverEjectMediaUnsupportedWhileMediaWork(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	front := frontWith(t, f, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/VirtualMedia/USB1") {
			redfishErr(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The resource at the URI was not found.")
			return true
		}
		return false
	})
	o := newOpener(t, Options{MediaSettle: time.Second})
	c := open(t, o, endpoint(front.URL, ""))
	ctx := context.Background()
	if err := c.InsertMedia(ctx, "http://images.example/boot.iso"); err != nil {
		t.Fatalf("insert: %v", err)
	}
	err := c.EjectMedia(ctx)
	img, in, _ := f.Media("1")
	t.Logf("EjectMedia: kind %s: %v; CD now %q inserted=%v", bmc.KindOf(err), err, img, in)
	if bmc.KindOf(err) == bmc.KindUnsupported || errors.Is(err, bmc.ErrNoVirtualMedia) {
		t.Fatalf("EjectMedia on a BMC with working virtual media says unsupported (jobs: 'no virtual media'): %v", err)
	}
	if in {
		t.Fatal("the CD was not ejected")
	}
}

// The slot holds an earlier image, the BMC refuses the eject
// that insertVerified sends first, in words that mention the image: the
// whole InsertMedia is re-kinded KindImage ("the image's fault"), and the
// deploy fails the instance on its image, although the image was never
// sent.
func TestDriverEjectFailureBlamedOnImage(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	front := frontWith(t, f, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.Method == http.MethodPost && strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "EjectMedia") {
			redfishErr(w, http.StatusInternalServerError, "Base.1.8.InternalError",
				"Unable to eject the image: the virtual media device is busy.")
			return true
		}
		return false
	})
	o := newOpener(t, Options{MediaSettle: time.Second})
	c := open(t, o, endpoint(front.URL, ""))
	ctx := context.Background()
	if err := c.InsertMedia(ctx, "http://images.example/old.iso"); err != nil {
		t.Fatal(err)
	}
	err := c.InsertMedia(ctx, "http://images.example/new.iso")
	t.Logf("InsertMedia: kind %s: %v", bmc.KindOf(err), err)
	if bmc.KindOf(err) == bmc.KindImage {
		t.Fatalf("an eject the BMC refused is blamed on the new image: %v", err)
	}
}

// Processors give TotalCores but not TotalThreads, and the
// summary gives LogicalProcessorCount (the thread count): cpus is the
// cores, half the threads the doc promises, because summed cores rank
// above LogicalProcessorCount.
func TestDriverCoresBeatLogicalProcessorCount(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	front := frontWith(t, f, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/Processors/CPU") {
			rewriteGET(f, w, r, func(m map[string]any) { delete(m, "TotalThreads") })
			return true
		}
		return false
	})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(front.URL, ""))
	inv, err := c.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inventory %+v", inv)
	if inv.CPUs != 32 {
		t.Fatalf("cpus %d, want the 32 threads the summary's LogicalProcessorCount gives", inv.CPUs)
	}
}

// InsertMedia refused with and without Inserted/WriteProtected:
// the first refusal is formatted with %v, i.e. gofish's Error(), which is
// "<status>: <the whole raw body>", not the reduced HTTPError the doc
// promises ("never the raw body: a BMC may echo a request").
func TestDriverRawBodyInInsertError(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	front := frontWith(t, f, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "InsertMedia") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"Base.1.8.GeneralError","message":"bad request","@Message.ExtendedInfo":[{"MessageId":"Base.1.8.PropertyValueFormatError","Message":"bad value"}]},"EchoedRequest":` + string(body) + `,"Debug":"RAW-BODY-MARKER"}`))
			return true
		}
		return false
	})
	o := newOpener(t, Options{MediaSettle: time.Second})
	c := open(t, o, endpoint(front.URL, ""))
	err := c.InsertMedia(context.Background(), "http://images.example/boot.iso?X-Amz-Signature=deadbeefcafe")
	t.Logf("%v", err)
	if err != nil && strings.Contains(err.Error(), "RAW-BODY-MARKER") {
		t.Fatalf("the raw body of the BMC's answer is in the error: %v", err)
	}
}

// (pre-existing). "Clients of a closed Opener fail": a Client
// opened before Close logs in again after it, and that session is never
// logged out.
func TestDriverClientAfterClose(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	o := NewOpener(Options{})
	c := open(t, o, endpoint(f.URL(), ""))
	mustPower(t, c, bmc.PowerOff)
	o.Close()
	_, err := c.PowerState(context.Background())
	t.Logf("after Close: err=%v, sessions on the BMC %d", err, f.Sessions())
	if err == nil {
		t.Fatalf("a Client of a closed Opener still works (and holds a new session: %d)", f.Sessions())
	}
}
