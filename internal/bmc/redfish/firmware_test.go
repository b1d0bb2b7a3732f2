package redfish

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// fwImages serves firmware images in the simulator's format.
func fwImages(t *testing.T, files map[string]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func fwTasks(q *sim.Quirks) { q.TaskDelay = 20 * time.Millisecond; q.Update.BMCRestart = -1 }

func component(t *testing.T, fw []bmc.FirmwareComponent, name string) bmc.FirmwareComponent {
	t.Helper()
	for _, c := range fw {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s in %+v", name, fw)
	return bmc.FirmwareComponent{}
}

// The standard UpdateService: each system of a two-system service sees
// its own three entries (RelatedItem); a BIOS update targeted at its
// entry runs as a task, is staged until the reset, then shows.
func TestFirmwareUpdateStandard(t *testing.T) {
	img := fwImages(t, map[string]string{"/bios.txt": "component=BIOS\nversion=2.1.0\n"})
	f := startFleet(t, sim.Options{Systems: 2, Tweak: fwTasks})
	o := newOpener(t, Options{})
	c := open(t, o, endpoint(f.URL(), "2"))
	ctx := context.Background()

	fw, err := c.Firmware(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fw) != 3 {
		t.Fatalf("system 2's firmware: %+v", fw)
	}
	bios := component(t, fw, "BIOS")
	if bios.ID != "/redfish/v1/UpdateService/FirmwareInventory/2-BIOS" || bios.Version != "1.0.0-sim" || !bios.Updateable ||
		component(t, fw, "NIC.Integrated.1").Updateable {
		t.Fatalf("entries %+v", fw)
	}
	task, err := c.SimpleUpdate(ctx, img+"/bios.txt", []string{bios.ID})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(task.Monitor, "/redfish/v1/TaskService/TaskMonitors/") {
		t.Fatalf("task %+v", task)
	}
	if st := waitTask(t, c, task.Monitor); st.Failed {
		t.Fatalf("task failed: %+v", st)
	}
	if fw, _ = c.Firmware(ctx); component(t, fw, "BIOS").Version != "1.0.0-sim" {
		t.Fatalf("before the reset: %+v", fw)
	}
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	if fw, _ = c.Firmware(ctx); component(t, fw, "BIOS").Version != "2.1.0" {
		t.Fatalf("after the reset: %+v", fw)
	}
	if cur, _, _ := f.Firmware("1"); cur["BIOS"] != "1.0.0-sim" {
		t.Fatalf("system 1 was updated too: %v", cur)
	}
}

// A task that fails says why, naming the image; refusals are KindRefused
// naming the parameter; a BMC without an UpdateService or without the
// action is KindUnsupported.
func TestFirmwareUpdateFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/bios.txt"
	ln.Close()
	f := startFleet(t, sim.Options{Tweak: fwTasks})
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	ctx := context.Background()

	task, err := c.SimpleUpdate(ctx, dead, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := waitTask(t, c, task.Monitor)
	if !st.Failed || !strings.Contains(st.Message, "The image at "+dead+" could not be fetched") {
		t.Fatalf("unreachable image: %+v", st)
	}

	_, err = c.SimpleUpdate(ctx, "http://images.example/nic.bin", []string{"/redfish/v1/UpdateService/FirmwareInventory/NIC.Integrated.1"})
	wantKind(t, err, bmc.KindRefused)
	if !strings.Contains(err.Error(), "the BMC refused Targets of the firmware update from http://images.example/.../nic.bin") {
		t.Fatalf("refusal: %v", err)
	}
	_, err = c.SimpleUpdate(ctx, "ftp://images.example/bios.bin?token=s3cret", nil)
	wantKind(t, err, bmc.KindRefused)
	if !strings.Contains(err.Error(), "refused ImageURI") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("ftp image: %v", err)
	}

	for name, tweak := range map[string]func(*sim.Quirks){
		"no UpdateService": func(q *sim.Quirks) { q.Update.None = true },
		"no SimpleUpdate":  func(q *sim.Quirks) { q.Update.NoSimpleUpdate = true },
	} {
		f := startFleet(t, sim.Options{Tweak: tweak})
		c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
		_, err := c.SimpleUpdate(ctx, "http://images.example/bios.bin", nil)
		wantKind(t, err, bmc.KindUnsupported)
		if !strings.Contains(err.Error(), "firmware updates (UpdateService)") {
			t.Fatalf("%s: %v", name, err)
		}
		fw, err := c.Firmware(ctx)
		if name == "no SimpleUpdate" && (err != nil || len(fw) != 3) {
			t.Fatalf("%s: inventory %+v %v", name, fw, err)
		}
		if name == "no UpdateService" {
			wantKind(t, err, bmc.KindUnsupported)
		}
	}
}

// TransferProtocol goes only with a scheme the BMC lists.
func TestTransferProtocol(t *testing.T) {
	for _, c := range []struct {
		allowed []string
		image   string
		want    string
	}{
		{[]string{"HTTP", "HTTPS"}, "https://h/fw.bin", "HTTPS"},
		{[]string{"HTTP"}, "https://h/fw.bin", ""},
		{nil, "http://h/fw.bin", ""},
		{[]string{"Http"}, "HTTP://h/fw.bin", "Http"},
	} {
		if got := transferProtocol(c.allowed, c.image); got != c.want {
			t.Errorf("%v %s: %q, want %q", c.allowed, c.image, got, c.want)
		}
	}
}

// iDRAC: entries named by component id and version, Targets ignored, a
// BIOS update's task pending until the reset. iLO: an image it cannot
// process answered 200 (no task, nothing flashed), ids with a trailing
// slash. sushy-tools: no inventory but the System's BiosVersion, which
// SimpleUpdate bumps at once given the System as target; without Targets
// it refuses.
func TestFirmwareUpdateDialects(t *testing.T) {
	img := fwImages(t, map[string]string{
		"/bios.txt":     "component=BIOS\nversion=2.1.0",
		"/ilo.bin":      "component=BMC\nversion=2.72",
		"/cp0123.fwpkg": "PK\x03\x04 smart component",
	})
	ctx := context.Background()

	t.Run("idrac9", func(t *testing.T) {
		t.Parallel()
		f := startFleet(t, sim.Options{Dialect: sim.DialectIDRAC9, Tweak: fwTasks})
		c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
		fw, err := c.Firmware(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bios := component(t, fw, "BIOS")
		if bios.ID != "/redfish/v1/UpdateService/FirmwareInventory/Installed-159-1.0.0-sim" {
			t.Fatalf("iDRAC BIOS %+v", bios)
		}
		task, err := c.SimpleUpdate(ctx, img+"/bios.txt", []string{bios.ID})
		if err != nil || task.Monitor == "" {
			t.Fatalf("%+v %v", task, err)
		}
		time.Sleep(150 * time.Millisecond)
		st, err := c.TaskStatus(ctx, task)
		if err != nil || st.Done || !strings.Contains(st.Message, "Task successfully scheduled.") {
			t.Fatalf("scheduled: %+v %v", st, err)
		}
		if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
			t.Fatal(err)
		}
		if st := waitTask(t, c, task.Monitor); st.Failed {
			t.Fatalf("after the reset: %+v", st)
		}
		fw, _ = c.Firmware(ctx)
		if b := component(t, fw, "BIOS"); b.Version != "2.1.0" || b.ID != "/redfish/v1/UpdateService/FirmwareInventory/Installed-159-2.1.0" {
			t.Fatalf("after the reset: %+v", b)
		}
	})
	t.Run("ilo5", func(t *testing.T) {
		t.Parallel()
		f := startFleet(t, sim.Options{Dialect: sim.DialectILO5, Tweak: fwTasks})
		c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
		task, err := c.SimpleUpdate(ctx, img+"/cp0123.fwpkg", nil)
		if err != nil || task.Monitor != "" {
			t.Fatalf("smart component: %+v %v", task, err)
		}
		if fw, _ := c.Firmware(ctx); component(t, fw, "iLO 5").Version != "1.0.0-sim" {
			t.Fatalf("flashed anyway: %+v", fw)
		}
		task, err = c.SimpleUpdate(ctx, img+"/ilo.bin", nil)
		if err != nil || !strings.HasSuffix(task.Monitor, "/") {
			t.Fatalf("iLO binary: %+v %v", task, err)
		}
		waitTask(t, c, task.Monitor)
		fw, err := c.Firmware(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ilo := component(t, fw, "iLO 5"); ilo.Version != "2.72" || ilo.ID != "/redfish/v1/UpdateService/FirmwareInventory/1" {
			t.Fatalf("iLO entry %+v", ilo)
		}
	})
	t.Run("sushy", func(t *testing.T) {
		t.Parallel()
		f := startFleet(t, sim.Options{Dialect: sim.DialectSushy})
		c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
		fw, err := c.Firmware(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(fw) != 1 || fw[0].ID != f.SystemIDs()[0] || fw[0].Version != "1.0.0-sim" || !fw[0].Updateable {
			t.Fatalf("sushy firmware %+v", fw)
		}
		_, err = c.SimpleUpdate(ctx, img+"/bios.txt", nil)
		wantKind(t, err, bmc.KindRefused)
		if !strings.Contains(err.Error(), "refused ImageURI, Targets of the firmware update") {
			t.Fatalf("without Targets: %v", err)
		}
		task, err := c.SimpleUpdate(ctx, img+"/bios.txt", []string{fw[0].ID})
		if err != nil || task.Monitor != "" {
			t.Fatalf("%+v %v", task, err)
		}
		if fw, _ = c.Firmware(ctx); fw[0].Version != "1.1.0-sim" {
			t.Fatalf("after the update %+v", fw)
		}
	})
}

// Through Drivers, the Redfish client has the capability.
func TestFirmwareCapability(t *testing.T) {
	f := startFleet(t, sim.Options{})
	cl, err := bmc.Drivers{"redfish": newOpener(t, Options{})}.Open(context.Background(), endpoint(f.URL(), ""))
	if err != nil {
		t.Fatal(err)
	}
	fu, err := bmc.Capability[bmc.FirmwareUpdater](cl)
	if err != nil {
		t.Fatal(err)
	}
	if fw, err := fu.Firmware(context.Background()); err != nil || len(fw) != 3 {
		t.Fatalf("%+v %v", fw, err)
	}
}
