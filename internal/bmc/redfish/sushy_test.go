package redfish

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// bootPatches fronts a fleet, records the bodies of PATCHes to systems and
// answers some of them itself: refuse(n) (n counts from 1) picks a status
// for the n-th PATCH, 0 passes it on to the fleet.
type bootPatches struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func frontPatches(t *testing.T, f *sim.Fleet, refuse func(n int) int) *bootPatches {
	t.Helper()
	b := &bootPatches{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/Systems/") {
			body, _ := io.ReadAll(r.Body)
			b.mu.Lock()
			b.bodies = append(b.bodies, string(body))
			n := len(b.bodies)
			b.mu.Unlock()
			if st := refuse(n); st != 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(st)
				_, _ = io.WriteString(w, `{"error":{"code":"Base.1.8.GeneralError","message":"refused by the test","@Message.ExtendedInfo":[{"MessageId":"Base.1.8.PropertyValueConflict","Message":"The property BootSourceOverrideEnabled could not be written (refused by the test)."}]}}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		f.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *bootPatches) sent() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.bodies...)
}

func wantOverride(t *testing.T, f *sim.Fleet, target, enabled string) {
	t.Helper()
	gt, ge, err := f.BootOverride("1")
	if err != nil {
		t.Fatal(err)
	}
	if gt != target || ge != enabled {
		t.Fatalf("BMC boot override %s/%s, want %s/%s", gt, ge, target, enabled)
	}
}

// sushy-tools refuses Enabled=Disabled alone and reads back Continuous
// whatever it is told: clearing sends a target it allows and counts a
// persistent boot from disk as cleared.
func TestSushyClearBootOverride(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectSushy})
	front := frontPatches(t, f, func(int) int { return 0 })
	c := open(t, newOpener(t, Options{}), endpoint(front.URL, ""))
	ctx := context.Background()

	wantOverride(t, f, "Hdd", "Continuous")
	if err := c.SetBootDevice(ctx, bmc.BootNone, false); err != nil {
		t.Fatalf("clear on a fresh sushy system: %v", err)
	}
	if got := front.sent(); len(got) != 0 {
		t.Fatalf("a persistent boot from disk is cleared already, yet the driver sent %q", got)
	}

	if err := c.SetBootDevice(ctx, bmc.BootCD, false); err != nil {
		t.Fatal(err)
	}
	wantOverride(t, f, "Cd", "Continuous") // sushy cannot boot once
	if err := c.SetBootDevice(ctx, bmc.BootNone, false); err != nil {
		t.Fatalf("clear after a CD boot: %v", err)
	}
	wantOverride(t, f, "Hdd", "Continuous")
	got := front.sent()
	if len(got) != 2 || !strings.Contains(got[1], `"BootSourceOverrideTarget":"Hdd"`) || !strings.Contains(got[1], `"BootSourceOverrideEnabled":"Disabled"`) {
		t.Fatalf("PATCHes sent %q: want the CD override, then Disabled with target Hdd", got)
	}
	if err := c.SetBootDevice(ctx, bmc.BootNone, false); err != nil {
		t.Fatal(err)
	}
	if n := len(front.sent()); n != 2 {
		t.Fatalf("clearing a cleared override sent %d more PATCHes", n-2)
	}
}

// A 400 to one form of clearing moves on to the next; only when every
// form is refused does the call fail, with KindRefused naming what was
// sent and the BMC's words. Other failures are not retried with another
// form.
func TestClearBootOverrideForms(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T, refuse func(n int) int) (*sim.Fleet, *bootPatches, *Client) {
		f := startFleet(t, sim.Options{Systems: 1, Dialect: sim.DialectSushy})
		_ = f.SetPower("1", false)
		front := frontPatches(t, f, func(n int) int {
			if n == 1 {
				return 0 // the CD override that makes clearing necessary
			}
			return refuse(n - 1)
		})
		c := open(t, newOpener(t, Options{}), endpoint(front.URL, ""))
		if err := c.SetBootDevice(ctx, bmc.BootCD, false); err != nil {
			t.Fatal(err)
		}
		return f, front, c
	}

	t.Run("first form refused", func(t *testing.T) {
		f, front, c := setup(t, func(n int) int {
			if n == 1 {
				return http.StatusBadRequest
			}
			return 0
		})
		if err := c.SetBootDevice(ctx, bmc.BootNone, false); err != nil {
			t.Fatalf("clear: %v", err)
		}
		// Disabled+Hdd (refused by the front), Disabled alone (refused by
		// sushy: it wants a target), then a persistent boot from disk.
		got := front.sent()[1:]
		want := []string{
			`{"Boot":{"BootSourceOverrideEnabled":"Disabled","BootSourceOverrideTarget":"Hdd"}}`,
			`{"Boot":{"BootSourceOverrideEnabled":"Disabled"}}`,
			`{"Boot":{"BootSourceOverrideEnabled":"Continuous","BootSourceOverrideTarget":"Hdd"}}`,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("forms sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		wantOverride(t, f, "Hdd", "Continuous")
	})

	t.Run("every form refused", func(t *testing.T) {
		f, front, c := setup(t, func(int) int { return http.StatusBadRequest })
		err := c.SetBootDevice(ctx, bmc.BootNone, false)
		wantKind(t, err, bmc.KindRefused)
		for _, s := range []string{"Boot.BootSourceOverrideEnabled=Disabled with Boot.BootSourceOverrideTarget=Hdd", "HTTP 400", "The property BootSourceOverrideEnabled could not be written"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error does not say %q: %v", s, err)
			}
		}
		if statusOf(err) != http.StatusBadRequest {
			t.Errorf("the BMC's status is lost: %v", err)
		}
		if n := len(front.sent()) - 1; n != 3 {
			t.Errorf("%d forms tried, want 3", n)
		}
		wantOverride(t, f, "Cd", "Continuous")
	})

	t.Run("server error is not a form problem", func(t *testing.T) {
		_, front, c := setup(t, func(int) int { return http.StatusInternalServerError })
		err := c.SetBootDevice(ctx, bmc.BootNone, false)
		wantKind(t, err, bmc.KindBMCError)
		if n := len(front.sent()) - 1; n != 1 {
			t.Errorf("%d forms tried after a 500, want 1", n)
		}
	})
}

// The standard dialect keeps clearing with the "None" target it lists.
func TestClearBootOverrideStandard(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1})
	front := frontPatches(t, f, func(int) int { return 0 })
	c := open(t, newOpener(t, Options{}), endpoint(front.URL, ""))
	ctx := context.Background()
	if err := c.SetBootDevice(ctx, bmc.BootCD, false); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBootDevice(ctx, bmc.BootNone, false); err != nil {
		t.Fatal(err)
	}
	wantOverride(t, f, "None", "Disabled")
	if got := front.sent(); len(got) != 2 || got[1] != `{"Boot":{"BootSourceOverrideEnabled":"Disabled","BootSourceOverrideTarget":"None"}}` {
		t.Fatalf("PATCHes %q", got)
	}
}

// A BMC that fetches the image at insert and cannot says so; the driver
// reports that as the image's fault (KindImage) with the BMC's words, on
// sushy-tools (500 under /Systems/{id}/VirtualMedia) and on the standard
// sim fetching CD images (400 CouldNotEstablishConnection). A BMC in
// trouble stays a BMC error.
func TestInsertMediaImageErrors(t *testing.T) {
	ctx := context.Background()
	image := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok.iso" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(make([]byte, 64<<10))
	}))
	defer image.Close()
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close()

	for _, tc := range []struct {
		name string
		opts sim.Options
		want string
	}{
		{"sushy", sim.Options{Systems: 1, Dialect: sim.DialectSushy}, "Failed fetching image from URL"},
		{"standard fetching CDs", sim.Options{Systems: 1, FetchCDMedia: true}, "could not be fetched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFleet(t, tc.opts)
			c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))

			for _, url := range []string{image.URL + "/missing.iso", refused.URL + "/x.iso"} {
				err := c.InsertMedia(ctx, url)
				wantKind(t, err, bmc.KindImage)
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("the BMC's reason is lost: %v", err)
				}
				if _, in, _ := f.Media("1"); in {
					t.Fatal("a failed insert left media inserted")
				}
			}

			if err := c.InsertMedia(ctx, image.URL+"/ok.iso"); err != nil {
				t.Fatalf("insert a fetchable image: %v", err)
			}
			if img, in, _ := f.Media("1"); !in || img != image.URL+"/ok.iso" {
				t.Fatalf("media %q inserted=%v", img, in)
			}
			if err := c.EjectMedia(ctx); err != nil {
				t.Fatal(err)
			}

			_ = f.SetFault("1", sim.FaultError)
			err := c.InsertMedia(ctx, image.URL+"/ok.iso")
			wantKind(t, err, bmc.KindBMCError)
			var be *bmc.Error
			if !errors.As(err, &be) || be.Kind == bmc.KindImage {
				t.Fatalf("a failing BMC was blamed on the image: %v", err)
			}
		})
	}
}
