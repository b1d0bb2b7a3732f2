package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/httpapi"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// fakeImages stands for agentboot.Builder: its initramfs names the boot's
// token, so a test sees which boot it got.
type fakeImages struct{}

func (fakeImages) ISO(_ context.Context, cfg agent.Config) ([]byte, error) {
	return []byte("iso for " + cfg.Token), nil
}
func (fakeImages) Initrd(_ context.Context, cfg agent.Config) ([]byte, error) {
	return []byte("initrd for " + cfg.Token + " at " + cfg.API + " trusting " + cfg.CACerts), nil
}
func (fakeImages) Kernel() ([]byte, error) { return []byte("kernel"), nil }
func (fakeImages) Cmdline() string         { return "console=ttyS0 quiet" }

const testAgentURL = "http://10.9.0.1:8080"

// The iPXE script endpoint boots the agent only on the machine the
// controller is booting, only until that agent calls in, and never when
// two nodes claim the machine; everything else is sent to its next
// device. The boot's files open with its key only.
func TestAgentNetbootScript(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) { testAgentNetbootScript(t, open) })
	}
}

func testAgentNetbootScript(t *testing.T, open func(testing.TB) store.Store) {
	e := newEnv(t, open, func(o *httpapi.Options) {
		o.AgentImages, o.AgentURL, o.AgentCACerts = fakeImages{}, testAgentURL, "PEM"
	})
	ctx := context.Background()
	const uuid = "4c4c4544-0042-3010-8056-b4c04f4d3132"
	a, b := e.createNode("nb-a"), e.createNode("nb-b")
	token, hash := baremetal.NewAgentToken()
	ids := append(baremetal.NetbootUUIDs(uuid), baremetal.NetbootMAC("52:54:00:00:00:0a"))
	sess := &baremetal.AgentSession{NodeID: a.ID, Purpose: baremetal.AgentClean, Token: token, TokenHash: hash,
		NetbootIDs: ids, IdentityIDs: ids}
	if err := e.st.PutAgentSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	script := func(query string) string {
		t.Helper()
		r := e.do("GET", api.AgentNetbootPath+query, "", "")
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || !strings.HasPrefix(string(r.body), "#!ipxe\n") {
			t.Fatalf("GET netboot%s: %d %s\n%s", query, r.status, r.header.Get("Content-Type"), r.body)
		}
		return string(r.body)
	}
	boots := func(s string) bool { return strings.Contains(s, "\nkernel ") && strings.Contains(s, "\nboot\n") }

	if s := script(""); !strings.Contains(s, "chain --autofree "+testAgentURL+api.AgentNetbootPath+"?uuid=${uuid}&mac=${mac}") {
		t.Fatalf("the first script does not ask again with the machine's identity:\n%s", s)
	}
	for _, q := range []string{"?uuid=" + strings.ToUpper(uuid), "?mac=52-54-00-00-00-0A", "?uuid=00000000-0000-0000-0000-000000000000&mac=52:54:00:00:00:0a"} {
		s := script(q)
		key := baremetal.AgentBootKey(token)
		if !boots(s) || !strings.Contains(s, "kernel "+testAgentURL+"/v1/agent/boot/"+a.ID+"/"+key+"/vmlinuz initrd=initrd console=ttyS0 quiet\n") ||
			!strings.Contains(s, "initrd "+testAgentURL+"/v1/agent/boot/"+a.ID+"/"+key+"/initrd\n") {
			t.Fatalf("script for %s:\n%s", q, s)
		}
		if strings.Contains(s, token) {
			t.Fatal("the script shows the agent token")
		}
	}
	// The files of the boot, by its key; another key opens nothing.
	base := "/v1/agent/boot/" + a.ID + "/" + baremetal.AgentBootKey(token) + "/"
	if r := e.do("GET", base+"initrd", "", ""); r.status != 200 || string(r.body) != "initrd for "+token+" at "+testAgentURL+" trusting PEM" {
		t.Fatalf("initrd: %d %q", r.status, r.body)
	}
	if r := e.do("GET", base+"vmlinuz", "", ""); r.status != 200 || string(r.body) != "kernel" {
		t.Fatalf("kernel: %d %q", r.status, r.body)
	}
	for _, p := range []string{base + "grub.cfg", "/v1/agent/boot/" + a.ID + "/" + strings.Repeat("0", 64) + "/initrd", "/v1/agent/boot/" + b.ID + "/" + baremetal.AgentBootKey(token) + "/initrd"} {
		if r := e.do("GET", p, "", ""); r.status != 404 {
			t.Fatalf("GET %s: %d, want 404", p, r.status)
		}
	}
	if strings.Contains(e.logs.String(), baremetal.AgentBootKey(token)) {
		t.Error("a boot key appears in the logs")
	}

	// Unknown machines, and junk, go to their next device.
	for _, q := range []string{"?mac=52:54:00:00:00:0b", "?uuid=not-a-uuid", "?mac=%25", "?uuid=&mac="} {
		if s := script(q); boots(s) || !strings.Contains(s, "\nexit 1\n") {
			t.Fatalf("script for %s:\n%s", q, s)
		}
	}
	// Two nodes claiming the machine: neither is booted, and the
	// reason is on the console.
	t2, h2 := baremetal.NewAgentToken()
	if err := e.st.PutAgentSession(ctx, &baremetal.AgentSession{NodeID: b.ID, Purpose: baremetal.AgentClean, Token: t2, TokenHash: h2,
		NetbootIDs: []string{baremetal.NetbootMAC("52:54:00:00:00:0a")}}); err != nil {
		t.Fatal(err)
	}
	if s := script("?uuid=" + uuid + "&mac=52:54:00:00:00:0a"); boots(s) || !strings.Contains(s, "match the agent boots of 2 nodes") {
		t.Fatalf("script for a machine two nodes claim:\n%s", s)
	}
	if err := e.st.DeleteAgentSession(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	// A machine that fetched the initramfs with the node's MAC, and
	// reports with the token but as itself, is refused (403, a problem)
	// and the boot goes on as before.
	beat := func(inventory string) resp {
		return e.do("POST", api.AgentHeartbeatPath, token, `{"agent_version":"t","inventory":`+inventory+`}`)
	}
	if r := beat(`{"system":{"uuid":"11111111-2222-3333-4444-555555555555"},"cpus":1,"memory_bytes":1,"disks":[],"nics":[]}`); r.status != 403 ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") || strings.Contains(string(r.body), "command") {
		t.Fatalf("a report of another machine: %d %s", r.status, r.body)
	}
	if s := script("?uuid=" + uuid); !boots(s) {
		t.Fatalf("script after a refused report:\n%s", s)
	}
	// Once the node's agent has called in (its UUID), bound to the
	// address it reports from, its files are no longer handed out: not
	// the script, nor the kernel and the initramfs that holds the token.
	if r := beat(`{"system":{"uuid":"` + uuid + `"},"cpus":1,"memory_bytes":1,"disks":[],"nics":[]}`); r.status != 200 {
		t.Fatalf("the node's report: %d %s", r.status, r.body)
	}
	if cur, err := e.st.GetAgentSession(ctx, a.ID); err != nil || cur.AgentAddr != "127.0.0.1" || cur.LastSeenAt == nil {
		t.Fatalf("after the node's report: %+v %v; want it bound to the address it came from", cur, err)
	}
	if s := script("?uuid=" + uuid); boots(s) {
		t.Fatalf("script after the agent called in:\n%s", s)
	}
	for _, f := range []string{"initrd", "vmlinuz"} {
		if r := e.do("GET", base+f, "", ""); r.status != 404 || strings.Contains(string(r.body), token) {
			t.Fatalf("%s after the agent called in: %d, want 404", f, r.status)
		}
	}
}
