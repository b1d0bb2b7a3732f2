package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// TestAccImageDeployOnARealVM is what a user of the provider gets from a
// controller serving the deploy agent, through the real terraform binary:
// apply a baremetal_instance with deploy_method "image" on a node whose
// simulated Redfish BMC is backed by a qemu VM, and the VM's disk holds the
// image and a config-2 drive with the user data; a second plan is empty;
// destroy returns at once, and the cleaning the controller then runs
// boots the agent to erase the disk before the node is available again,
// the VM off.
func TestAccImageDeployOnARealVM(t *testing.T) {
	t.Parallel()
	requireAcc(t)
	kernel := testvm.Require(t)
	testvm.RequireISOLinux(t)
	bin := testvm.BuildController(t, t.TempDir())

	// 8 MiB: an MBR with one partition (the config drive joins the
	// table), then random bytes behind a header to look for; served as a
	// compressed qcow2, as distributions serve cloud images.
	raw := testvm.DiskImage(8<<20, "BAREMETAL-TF-IMAGE")
	img := testvm.Qcow2(t, raw)
	sum := sha256.Sum256(img)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	images := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "disk.img", time.Now(), bytes.NewReader(img))
	})}
	go func() { _ = images.Serve(l) }()
	t.Cleanup(func() { _ = images.Close() })
	// Where the VM (qemu user networking) reaches the host's loopback.
	imageURL := fmt.Sprintf("http://%s:%d/disk.img", testvm.HostAddr, l.Addr().(*net.TCPAddr).Port)

	const diskBytes = 4 << 30 // sparse; the default root disk is at least 4 GiB
	env := accEnv(t, testenv.Options{
		Systems: 1, PowerSyncInterval: time.Second,
		SimOptions:  sim.Options{VM: &sim.VMOptions{Dir: t.TempDir(), DiskBytes: diskBytes, MemoryMB: 512}},
		AgentKernel: kernel, AgentBinary: bin, AgentHost: testvm.HostAddr, AgentTimeout: 4 * time.Minute,
	})
	sys := env.Sim.SystemIDs()[0]
	t.Cleanup(func() {
		if t.Failed() {
			serial, _ := env.Sim.VMSerial(sys)
			if len(serial) > 6000 {
				serial = "..." + serial[len(serial)-6000:]
			}
			t.Logf("VM console:\n%s", serial)
		}
	})
	// The operator enrolled the node; the configuration is a tenant's.
	node := enrollNode(t, env, "tf-vm-0", "vm", 0)
	vm, err := env.Sim.VM(sys)
	if err != nil {
		t.Fatal(err)
	}
	c := accClient(t, env, env.AdminToken)

	tf := newTFCLI(t, "BAREMETAL_ENDPOINT="+env.URL, "BAREMETAL_TOKEN="+env.AdminToken)
	tf.write(requiredProviders + fmt.Sprintf(`
provider "baremetal" {}

resource "baremetal_instance" "disk" {
  name          = "tf-disk"
  project       = "acc"
  node_id       = %q
  deploy_method = "image"
  image = {
    url      = %q
    checksum = "sha256:%s"
  }
  root_device = {
    name = "vda"
  }
  user_data = "#cloud-config\nhostname: tf-disk\n"
}

output "deploy_method" {
  value = baremetal_instance.disk.deploy_method
}
`, node.ID, imageURL, hex.EncodeToString(sum[:])))

	start := time.Now()
	out := tf.run(0, "apply", "-auto-approve")
	applied := time.Since(start)
	if !strings.Contains(out, "Apply complete! Resources: 1 added") || !strings.Contains(out, `deploy_method = "image"`) {
		t.Fatalf("apply:\n%s", out)
	}
	insts, err := c.ListInstances(context.Background())
	if err != nil || len(insts) != 1 || insts[0].Name != "tf-disk" || insts[0].State != api.InstanceActive || insts[0].NodeID != node.ID {
		t.Fatalf("instances after apply: %+v, %v; want tf-disk active on %s", insts, err, node.Name)
	}
	const tail = 72 << 20
	head, end := readFileAt(t, vm.Disk, 0, int64(len(raw))), readFileAt(t, vm.Disk, diskBytes-tail, tail)
	// Byte for byte, but for the partition table, which gained the
	// config drive's entry.
	if !bytes.Equal(head[:446], raw[:446]) || !bytes.Equal(head[512:], raw[512:]) {
		t.Fatal("the VM's disk does not hold the image terraform asked for")
	}
	if !bytes.Contains(end, []byte("config-2")) || !bytes.Contains(end, []byte("hostname: tf-disk")) {
		t.Error("no config-2 drive with the user data at the disk's end")
	}
	// Nothing drifts by itself.
	tf.run(0, "plan", "-detailed-exitcode")

	start = time.Now()
	out = tf.run(0, "destroy", "-auto-approve")
	destroyed := time.Since(start)
	if !strings.Contains(out, "Destroy complete! Resources: 1 destroyed") {
		t.Fatalf("destroy:\n%s", out)
	}
	n := waitNodeHealthy(t, c, node.ID, api.StateAvailable, 5*time.Minute)
	cleaned := time.Since(start)
	head, end = readFileAt(t, vm.Disk, 0, 1<<20), readFileAt(t, vm.Disk, diskBytes-tail, tail)
	if bytes.Contains(head, []byte("BAREMETAL-TF-IMAGE")) {
		t.Error("the image's header survived the cleaning")
	}
	if bytes.Contains(end, []byte("CD001")) {
		t.Error("the config drive's ISO 9660 signature survived the cleaning")
	}
	if p, _ := env.Sim.Power(sys); p != "Off" || n.PowerState != api.PowerOff {
		t.Errorf("VM power after cleaning: sim %s, node %s; want off", p, n.PowerState)
	}
	evs, err := c.ListNodeEvents(context.Background(), node.ID)
	if err != nil {
		t.Fatal(err)
	}
	var erased, converted bool
	for _, e := range evs {
		erased = erased || e.New == string(api.StateAvailable) && strings.Contains(e.Message, "disks erased (metadata)")
		converted = converted || strings.Contains(e.Message, "qcow2 image to /dev/vda")
	}
	if !erased {
		t.Errorf("no cleaning event saying the disks were erased: %+v", evs)
	}
	if !converted {
		t.Errorf("no deploy event saying the qcow2 image was written: %+v", evs)
	}
	t.Logf("terraform apply %s (to active, TCG VM, 8 MiB image as compressed qcow2), destroy %s, destroy to available (disk erased) %s",
		applied.Round(time.Millisecond), destroyed.Round(time.Millisecond), cleaned.Round(time.Millisecond))
}

// readFileAt reads n bytes of the file at path from off.
func readFileAt(t *testing.T, path string, off, n int64) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}
