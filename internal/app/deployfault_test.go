package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// TestImageDeploySurvivesPowerLossMidWrite: the machine loses power
// while its deploy agent writes the image, BMC included. The node shows
// it as faults that heal by themselves: bmc_unreachable while the BMC is
// down, then agent_lost as soon as the BMC is back and reports the
// machine off (not after --agent-timeout, which is minutes here); the
// deploy retries with a fresh agent boot, whose first report clears the
// fault, and the instance becomes active with the whole image on disk.
func TestImageDeploySurvivesPowerLossMidWrite(t *testing.T) {
	t.Parallel()
	kernel := testvm.Require(t)
	testvm.RequireISOLinux(t)
	bin := testvm.BuildController(t, t.TempDir())

	// A 16 MiB raw image (an MBR, then random bytes); its server holds
	// every read past the half while paused, so the agent is caught mid-write.
	raw := testvm.DiskImage(16<<20, "BAREMETAL-FAULT-IMAGE")
	sum := sha256.Sum256(raw)
	img := &pausedImage{data: raw, at: int64(len(raw) / 2), reached: make(chan struct{}), resume: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	images := &http.Server{Handler: img}
	go func() { _ = images.Serve(l) }()
	t.Cleanup(func() { img.release(); _ = images.Close() })
	imageURL := fmt.Sprintf("http://10.0.2.2:%d/disk.raw", l.Addr().(*net.TCPAddr).Port)

	env := testenv.Start(t, testenv.Options{
		Systems: 1, PowerSyncInterval: time.Second,
		SimOptions: sim.Options{VM: &sim.VMOptions{Dir: t.TempDir(), DiskBytes: 4 << 30, MemoryMB: 512}},
		// Far beyond this test's time: the loss must be seen from the
		// machine's power, not from the agent's silence running out.
		AgentKernel: kernel, AgentBinary: bin, AgentHost: "10.0.2.2", AgentTimeout: 10 * time.Minute,
	})
	sys := env.Sim.SystemIDs()[0]
	logConsoleOnFailure(t, env, sys, 6000, nil)
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}
	node := enroll(admin, env, 0, "vm-fault-0", "vm")
	vm, err := env.Sim.VM(sys)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	var inst api.Instance
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"survivor","node_id":%q,"deploy_method":"image","image":{"url":%q,"checksum":"sha256:%s"}}`,
		node.ID, imageURL, hex.EncodeToString(sum[:])), 201, &inst)
	select {
	case <-img.reached:
	case <-time.After(3 * time.Minute):
		t.Fatal("the agent did not get halfway through the image within 3 minutes")
	}
	midWrite := time.Since(start)

	// Power loss: the machine and its BMC.
	if err := env.Sim.SetPower(sys, false); err != nil {
		t.Fatal(err)
	}
	if err := env.Sim.SetFault(sys, sim.FaultDown); err != nil {
		t.Fatal(err)
	}
	lossAt := time.Now()
	n := admin.waitNode(node.ID, time.Minute, false, func(n api.Node) bool { return n.Fault == api.FaultBMCUnreachable })
	if n.ProvisionState != api.StateDeploying {
		t.Errorf("node %s while its BMC is down; want deploying", n.ProvisionState)
	}
	bmcFault := time.Since(lossAt)

	// Power back: the BMC answers (the machine stays off until the
	// controller turns it on), and the image is served in full.
	img.release()
	if err := env.Sim.SetFault(sys, sim.FaultNone); err != nil {
		t.Fatal(err)
	}
	backAt := time.Now()
	n = admin.waitNode(node.ID, time.Minute, false, func(n api.Node) bool { return n.Fault == api.FaultAgentLost })
	agentLost := time.Since(backAt)
	if !strings.Contains(n.LastError, "is off") || n.ProvisionState != api.StateDeploying {
		t.Errorf("agent_lost node: state %s, last_error %q; want deploying, saying the machine is off", n.ProvisionState, n.LastError)
	}
	var got api.Instance
	member.call("GET", "/v1/instances/"+inst.ID, "", 200, &got)
	if got.State != api.InstanceDeploying {
		t.Errorf("instance %s (last_error %q) while the deploy retries; want deploying", got.State, got.LastError)
	}

	deadline := time.Now().Add(4 * time.Minute)
	for got.State == api.InstanceDeploying {
		if time.Now().After(deadline) {
			t.Fatalf("instance still deploying 4 minutes after the power came back (node: %+v)", admin.node(node.ID))
		}
		time.Sleep(200 * time.Millisecond)
		member.call("GET", "/v1/instances/"+inst.ID, "", 200, &got)
	}
	if got.State != api.InstanceActive {
		t.Fatalf("instance %s: %q; want active after the retry", got.State, got.LastError)
	}
	total := time.Since(start)
	n = admin.node(node.ID)
	if n.Fault != "" || n.LastError != "" {
		t.Errorf("node after the deploy: fault %q, last_error %q; want healed", n.Fault, n.LastError)
	}
	if disk := readAt(t, vm.Disk, 0, int64(len(raw))); !bytes.Equal(disk, raw) {
		t.Error("the VM's disk does not hold the image after the retried write")
	}

	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+node.ID+"/events?limit=200", "", 200, &evs)
	var bmcHealed, lostRaised, lostCleared bool
	for _, e := range evs.Items {
		if e.Type != "fault" {
			continue
		}
		bmcHealed = bmcHealed || e.Old == string(api.FaultBMCUnreachable) && strings.Contains(e.Message, "BMC reachable again")
		lostRaised = lostRaised || e.New == string(api.FaultAgentLost)
		lostCleared = lostCleared || e.Old == string(api.FaultAgentLost) && e.New == ""
	}
	if !bmcHealed || !lostRaised || !lostCleared {
		t.Errorf("fault events: BMC healed %v, agent_lost raised %v and cleared %v: %+v", bmcHealed, lostRaised, lostCleared, evs.Items)
	}
	t.Logf("POST to mid-write %s; power loss to bmc_unreachable %s; BMC back to agent_lost %s; POST to active %s (TCG VM, 16 MiB raw image)",
		midWrite.Round(time.Millisecond), bmcFault.Round(time.Millisecond), agentLost.Round(time.Millisecond), total.Round(time.Millisecond))
}

// pausedImage serves data with Range support, holding every read at or
// past offset at until released; reached is closed when a read first
// waits there.
type pausedImage struct {
	data    []byte
	at      int64
	reached chan struct{}
	resume  chan struct{}
	once    sync.Once
	rel     sync.Once
}

func (p *pausedImage) release() { p.rel.Do(func() { close(p.resume) }) }

func (p *pausedImage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	http.ServeContent(w, r, "disk.raw", time.Unix(1700000000, 0), &pausingReader{p: p, ctx: r.Context(), r: bytes.NewReader(p.data)})
}

type pausingReader struct {
	p   *pausedImage
	ctx context.Context
	r   *bytes.Reader
}

func (pr *pausingReader) Seek(off int64, whence int) (int64, error) { return pr.r.Seek(off, whence) }

func (pr *pausingReader) Read(b []byte) (int, error) {
	pos := int64(len(pr.p.data)) - int64(pr.r.Len())
	if pos < pr.p.at && pos+int64(len(b)) > pr.p.at {
		b = b[:pr.p.at-pos] // up to the pause, then wait at it
	}
	if pos >= pr.p.at {
		select {
		case <-pr.p.resume:
		default:
			pr.p.once.Do(func() { close(pr.p.reached) })
			select {
			case <-pr.p.resume:
			case <-pr.ctx.Done():
				return 0, io.ErrUnexpectedEOF
			}
		}
	}
	return pr.r.Read(b)
}
