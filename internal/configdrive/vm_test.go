package configdrive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// guestReport is internal/testvm/netguest's Report.
type guestReport struct {
	Interface string            `json:"interface"`
	MAC       string            `json:"mac"`
	MTU       int               `json:"mtu"`
	Addresses []string          `json:"addresses"`
	Gateway   string            `json:"gateway"`
	Routes    []string          `json:"routes"`
	Links     map[string]string `json:"links"`
	Error     string            `json:"error"`
}

// TestNetworkDataConfiguresAVM boots a VM with two NICs and a config
// drive built by Build, whose network puts a static address, MTU and
// routes on the second NIC (named by the port inspection would report,
// so rendered as its MAC). The guest's init (internal/testvm/netguest)
// mounts the drive by its label as a CD, applies network_data.json to the
// NIC with that MAC and reports what the kernel then has. The first NIC's
// network is isolated from the host, so the report arrives only if the
// guest chose the right NIC.
func TestNetworkDataConfiguresAVM(t *testing.T) {
	kernel := testvm.Require(t)
	start := time.Now()
	dir := t.TempDir()

	initBin := filepath.Join(dir, "init")
	cmd := exec.Command("go", "build", "-o", initBin, "github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm/netguest")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build netguest: %v\n%s", err, out)
	}
	var initrd bytes.Buffer
	mods, err := image.BuildInitrd(&initrd, image.InitrdOptions{Agent: initBin, Kernel: kernel,
		Modules: []string{"virtio_rng", "virtio_pci", "virtio_net", "ata_piix", "sr_mod", "isofs"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"virtio_net", "sr_mod", "isofs"} {
		if !slices.ContainsFunc(mods, func(f string) bool { return strings.Contains(f, "/"+m+".ko") }) {
			t.Fatalf("kernel %s has no module %s (built in?): the initramfs has %v", kernel, m, mods)
		}
	}
	initrdPath := filepath.Join(dir, "initrd")
	if err := os.WriteFile(initrdPath, initrd.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	const isolatedMAC, uplinkMAC = "52:54:00:5e:00:01", "52:54:00:5e:00:02"
	inventory := []api.AgentNIC{{Name: "eth0", MAC: isolatedMAC}, {Name: "eth1", MAC: uplinkMAC}}
	n := baremetal.Network{
		Interfaces: []baremetal.NetInterface{
			{Name: "other", MAC: isolatedMAC},
			{Name: "uplink", Port: "eth1", MTU: 1400},
		},
		Addresses: []baremetal.NetAddress{{Interface: "uplink", Address: "10.0.2.15/24", Gateway: testvm.HostAddr,
			Routes: []baremetal.Route{{Destination: "192.0.2.0/24", Gateway: "10.0.2.3"}}}},
		DNSServers: []string{"10.0.2.3"},
	}
	if err := n.ValidateFor(inventory); err != nil {
		t.Fatal(err)
	}
	nd, err := configdrive.NetworkData(n, inventory)
	if err != nil {
		t.Fatal(err)
	}
	var iso bytes.Buffer
	if err := configdrive.Build(&iso, configdrive.Drive{UUID: "8f1d2b4e-0000-4000-8000-00000000000a", Name: "net-1", Hostname: "net-1", NetworkData: nd}); err != nil {
		t.Fatal(err)
	}
	isoPath := filepath.Join(dir, "config-2.iso")
	if err := os.WriteFile(isoPath, iso.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	reports := make(chan guestReport, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep guestReport
		if err := json.NewDecoder(r.Body).Decode(&rep); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		select {
		case reports <- rep:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	vm := testvm.Start(t, testvm.Options{
		Kernel: kernel, Initrd: initrdPath,
		Append: fmt.Sprintf("console=ttyS0 panic=-1 netguest.report=http://%s:%d/report", testvm.HostAddr, port),
		NICs:   []testvm.NIC{{MAC: isolatedMAC, Isolated: true}, {MAC: uplinkMAC}},
		Media:  []string{isoPath},
	})
	// The guest powers off after its report, or after failing to send
	// one: no need to wait out the timeout then.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		_, _ = vm.ShutdownReason(ctx)
		close(stopped)
	}()
	var rep guestReport
	select {
	case rep = <-reports:
	case <-stopped:
		select {
		case rep = <-reports:
		default:
			why := "it powered off without one"
			if ctx.Err() != nil {
				why = "in 2 minutes"
			}
			t.Fatalf("no report from the guest: %s; serial console:\n%s", why, vm.Serial())
		}
	}
	t.Logf("guest report after %s: %+v", time.Since(start).Round(time.Second), rep)
	if rep.Error != "" {
		t.Fatalf("the guest failed: %s\nserial console:\n%s", rep.Error, vm.Serial())
	}
	if rep.MAC != uplinkMAC || rep.Links[rep.Interface] != uplinkMAC || len(rep.Links) != 2 {
		t.Errorf("the guest configured %s (%s), want the NIC with MAC %s; its NICs: %v", rep.Interface, rep.MAC, uplinkMAC, rep.Links)
	}
	if !slices.Equal(rep.Addresses, []string{"10.0.2.15/24"}) || rep.Gateway != testvm.HostAddr || rep.MTU != 1400 {
		t.Errorf("the guest has addresses %v, gateway %q, MTU %d; want 10.0.2.15/24 via %s, MTU 1400", rep.Addresses, rep.Gateway, rep.MTU, testvm.HostAddr)
	}
	if !slices.Equal(rep.Routes, []string{"192.0.2.0/24 via 10.0.2.3"}) {
		t.Errorf("the guest has routes %v, want 192.0.2.0/24 via 10.0.2.3", rep.Routes)
	}
}
