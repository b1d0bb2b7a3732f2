package app_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// TestImageDeployAndErasingCleanupOnARealVM is deploy_method image end to
// end on the qemu-backed simulated BMC: the deploy agent (the controller's
// own binary, booted from the ISO the BMC fetched) streams a zstd image
// the test made to the VM's virtio disk, verifying its checksum, appends
// the config drive, and the VM boots from disk; the VM's disk file then
// holds exactly the image bytes and a config-2 drive with the user data.
// A wrong checksum fails the instance, not the node. Deleting the instance
// boots the agent again to erase the disk's signatures before the node is
// available for the next tenant.
func TestImageDeployAndErasingCleanupOnARealVM(t *testing.T) {
	t.Parallel()
	kernel := testvm.Require(t)
	testvm.RequireISOLinux(t)
	bin := testvm.BuildController(t, t.TempDir())

	// The image: 8 MiB of random bytes behind a recognisable header, served
	// zstd-compressed where the VM reaches the host (10.0.2.2).
	// It has an MBR with one Linux partition: the config drive needs a
	// partition table to join.
	raw := testvm.DiskImage(8<<20, "BAREMETAL-TEST-IMAGE")
	var zst bytes.Buffer
	zw, err := zstd.NewWriter(&zst)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(zst.Bytes())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	images := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "disk.raw.zst", time.Now(), bytes.NewReader(zst.Bytes()))
	})}
	go func() { _ = images.Serve(l) }()
	t.Cleanup(func() { _ = images.Close() })
	imageURL := fmt.Sprintf("http://10.0.2.2:%d/disk.raw.zst", l.Addr().(*net.TCPAddr).Port)

	env := testenv.Start(t, testenv.Options{
		Systems: 1, PowerSyncInterval: time.Second,
		SimOptions:  sim.Options{VM: &sim.VMOptions{Dir: t.TempDir(), DiskBytes: 4 << 30 /* sparse; the default root disk is at least 4 GiB */, MemoryMB: 512}},
		AgentKernel: kernel, AgentBinary: bin, AgentHost: "10.0.2.2", AgentTimeout: 4 * time.Minute,
	})
	sys := env.Sim.SystemIDs()[0]
	logConsoleOnFailure(t, env, sys, 8000, nil)
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	node := enroll(admin, env, 0, "vm-disk-0", "vm")
	vm, err := env.Sim.VM(sys)
	if err != nil {
		t.Fatal(err)
	}
	waitInstance := func(id string, timeout time.Duration, want ...api.InstanceState) api.Instance {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			var inst api.Instance
			member.call("GET", "/v1/instances/"+id, "", 200, &inst)
			for _, w := range want {
				if inst.State == w {
					return inst
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %s is %s after %s (last_error %q), want %v", inst.Name, inst.State, timeout, inst.LastError, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// A wrong checksum: the instance fails with the reason, the node is
	// cleaned (its disk erased) and available again, with no fault.
	var bad api.Instance
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"bad","node_id":%q,"image":{"url":%q,"checksum":"sha256:%s"}}`,
		node.ID, imageURL, strings.Repeat("0", 64)), 201, &bad)
	if bad.DeployMethod != api.DeployImage {
		t.Fatalf("deploy_method %q, want image (the controller serves the agent)", bad.DeployMethod)
	}
	bad = waitInstance(bad.ID, 4*time.Minute, api.InstanceError)
	if !strings.Contains(bad.LastError, "checksum") {
		t.Errorf("last_error %q does not name the checksum", bad.LastError)
	}
	n := admin.waitNode(node.ID, 4*time.Minute, false, available)
	if n.LastError != "" {
		t.Errorf("node after a bad image: last_error %q", n.LastError)
	}
	member.call("DELETE", "/v1/instances/"+bad.ID, "", 202, nil)

	// The real deploy.
	start := time.Now()
	var inst api.Instance
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"disk","node_id":%q,"image":{"url":%q,"checksum":"sha256:%s"},
		"user_data":"#cloud-config\nhostname: disk-test\n","root_device":{"name":"vda","size_gb":">= 4"}}`, node.ID, imageURL, hex.EncodeToString(sum[:])), 201, &inst)
	inst = waitInstance(inst.ID, 5*time.Minute, api.InstanceActive, api.InstanceError)
	if inst.State != api.InstanceActive {
		t.Fatalf("deploy failed: %q", inst.LastError)
	}
	deployed := time.Since(start)
	// The disk is sparse and 4 GiB: read its two ends.
	const tail = 72 << 20
	head, end := readAt(t, vm.Disk, 0, 16<<20), readAt(t, vm.Disk, 4<<30-tail, tail)
	disk := head
	// Byte for byte, but for the partition table, which gained the
	// config drive's entry.
	if !bytes.Equal(disk[:446], raw[:446]) || !bytes.Equal(disk[512:len(raw)], raw[512:]) {
		t.Fatal("the VM's disk does not hold the image")
	}
	if !bytes.Contains(end, []byte("config-2")) || !bytes.Contains(end, []byte("hostname: disk-test")) {
		t.Error("no config-2 drive with the user data at the disk's end")
	}
	if st, _ := env.Sim.VM(sys); st.BootDevice != "disk" || !st.Running {
		t.Errorf("VM after deploy: boot device %q, running %v", st.BootDevice, st.Running)
	}

	// Destroy: the next tenant gets no trace of this one.
	start = time.Now()
	member.call("DELETE", "/v1/instances/"+inst.ID, "", 202, nil)
	admin.waitNode(node.ID, 5*time.Minute, false, available)
	cleaned := time.Since(start)
	head, end = readAt(t, vm.Disk, 0, 16<<20), readAt(t, vm.Disk, 4<<30-tail, tail)
	if bytes.Contains(head[:1<<20], []byte("BAREMETAL-TEST-IMAGE")) {
		t.Error("the image's header survived the erasing cleanup")
	}
	if bytes.Contains(end, []byte("CD001")) {
		t.Error("the config drive's ISO 9660 signature survived the erasing cleanup")
	}
	if p, _ := env.Sim.Power(sys); p != "Off" {
		t.Errorf("VM power after cleaning: %s", p)
	}
	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+node.ID+"/events?limit=200", "", 200, &evs)
	var erased bool
	for _, e := range evs.Items {
		erased = erased || e.New == "available" && strings.Contains(e.Message, "disks erased (metadata)")
	}
	if !erased {
		t.Errorf("no cleaning event saying the disks were erased: %+v", evs.Items)
	}
	t.Logf("POST to active %s, DELETE to available %s (TCG VM, 8 MiB zstd image)", deployed.Round(time.Millisecond), cleaned.Round(time.Millisecond))
}

// readAt reads n bytes of the file at path from off.
func readAt(t *testing.T, path string, off, n int64) []byte {
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
