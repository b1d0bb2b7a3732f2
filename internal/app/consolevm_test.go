package app_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// TestIPMIConsoleOfAFailedDeployOnARealVM: the console of an IPMI node is
// recorded through a real BMC while the deploy agent boots, and a failed
// deploy's event ends with what the machine printed. The node's BMC is
// OpenIPMI's ipmi_sim, whose Serial-over-LAN carries the qemu VM's serial
// port (the chassis is the VM, as in TestIPMINetbootInspectOnARealVM);
// the deploy fails because the machine's only disk (1 GiB) is smaller
// than a root device may be by default (4 GiB), which the agent finds and
// says on its console.
func TestIPMIConsoleOfAFailedDeployOnARealVM(t *testing.T) {
	t.Parallel()
	env, sys := netbootEnv(t)
	bmc := ipmisim.StartWith(t, ipmisim.Config{Machine: fleetMachine{env.Sim, sys}})
	logConsoleOnFailure(t, env, sys, 6000, func() string { return fmt.Sprintf("IPMI bridge: %v", bmc.BridgeErr()) })
	admin := client{t, env.URL, env.AdminToken}
	member := client{t, env.URL, env.MemberToken(t, "p1")}

	raw := testvm.DiskImage(1<<20, "BAREMETAL-CONSOLE-IMAGE")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	images := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "disk.raw", time.Now(), strings.NewReader(string(raw)))
	})}
	go func() { _ = images.Serve(l) }()
	t.Cleanup(func() { _ = images.Close() })
	imageURL := fmt.Sprintf("http://10.0.2.2:%d/disk.raw", l.Addr().(*net.TCPAddr).Port)

	var node api.Node
	admin.call("POST", "/v1/nodes", fmt.Sprintf(`{"name":"vm-console","driver":"ipmi","resource_class":"vm","bmc":{"address":%q,"username":%q,"password":%q,"cipher_suite":3}}`,
		bmc.Address(), bmc.Username, bmc.Password), 201, &node)
	admin.waitNode(node.ID, 60*time.Second, false, available)
	// Nothing booted yet: nothing recorded.
	admin.call("GET", "/v1/nodes/"+node.ID+"/console/log", "", 404, nil)

	sum := sha256.Sum256(raw)
	var inst api.Instance
	member.call("POST", "/v1/instances", fmt.Sprintf(`{"name":"bad","node_id":%q,"image":{"url":%q,"checksum":"sha256:%s"}}`,
		node.ID, imageURL, hex.EncodeToString(sum[:])), 201, &inst)
	deadline := time.Now().Add(4 * time.Minute)
	for inst.State != api.InstanceError {
		if time.Now().After(deadline) {
			t.Fatalf("instance is %s (last_error %q), want error", inst.State, inst.LastError)
		}
		time.Sleep(500 * time.Millisecond)
		member.call("GET", "/v1/instances/"+inst.ID, "", 200, &inst)
	}

	var evs api.EventList
	admin.call("GET", "/v1/nodes/"+node.ID+"/events?limit=500", "", 200, &evs)
	var failed string
	for _, e := range evs.Items {
		if e.Type == "step" && strings.Contains(e.Message, "failed") {
			failed = e.Message
		}
	}
	if failed == "" {
		t.Fatalf("no failed step event: %+v", evs.Items)
	}
	_, lines, ok := strings.Cut(failed, jobs.ConsoleTailHeader+"\n")
	if !ok {
		var log api.NodeConsoleLog
		admin.call("GET", "/v1/nodes/"+node.ID+"/console/log", "", 200, &log)
		t.Fatalf("the failed deploy's event has no console lines:\n%s\nconsole log: %+v", failed, log)
	}
	t.Logf("the failed deploy's event:\n%s", failed)
	// The agent's own words, through the BMC: it found no disk to write.
	if !strings.Contains(lines, `level=ERROR msg="command failed"`) || !strings.Contains(lines, "no disk of at least 4.0 GiB") {
		t.Errorf("the console lines do not show the agent's failure:\n%s", lines)
	}

	var log api.NodeConsoleLog
	admin.call("GET", "/v1/nodes/"+node.ID+"/console/log", "", 200, &log)
	if log.NodeID != node.ID || !strings.Contains(log.Log, lines[:min(len(lines), 40)]) {
		t.Errorf("console log %+v lacks the event's lines", log)
	}
	if strings.Contains(log.Log, bmc.Password) || strings.Contains(failed, bmc.Password) || strings.ContainsAny(log.Log, "\x1b\r") {
		t.Errorf("the console log holds the BMC password or terminal escapes:\n%q", log.Log)
	}
	var tail api.NodeConsoleLog
	admin.call("GET", "/v1/nodes/"+node.ID+"/console/log?lines=3", "", 200, &tail)
	if n := strings.Count(tail.Log, "\n"); n != 3 {
		t.Errorf("?lines=3 gave %d lines:\n%s", n, tail.Log)
	}
	member.call("GET", "/v1/nodes/"+node.ID+"/console/log", "", 403, nil)
}
