package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// termPayload is issue #26's: it retitles and clears the terminal of
// whoever prints it raw.
const termPayload = "\x1b]0;owned\a\x1b[2J"

// TestAgentHeartbeatInput: every field of an agent's heartbeat is checked
// as every API field is: NUL, control characters in identifiers, values
// out of range and oversized text are a 400 naming the field, on both
// stores, and change nothing (a boot_id with NUL was a 500 on PostgreSQL
// and stored on SQLite; a 300 KB agent_version became a 300 KB event).
// Text that quotes the outside world (a failed command's message, which
// quotes an image server; firmware strings) is kept with its control
// characters escaped, so a terminal that prints it is not taken over
// (issue #26, items 19 and 20).
func TestAgentHeartbeatInput(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			ctx := context.Background()
			n := e.createNode("agent-in")
			token, hash := baremetal.NewAgentToken()
			cmd, _ := json.Marshal(api.AgentCommand{ID: "write-1", Kind: api.AgentWriteImage, Image: &api.Image{URL: "http://i/x"}})
			if err := e.st.PutAgentSession(ctx, &baremetal.AgentSession{NodeID: n.ID, Purpose: baremetal.AgentDeploy, Token: token, TokenHash: hash, Command: string(cmd)}); err != nil {
				t.Fatal(err)
			}
			events := func() int {
				evs, _, err := e.st.ListEvents(ctx, n.ID, store.Page{Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				return len(evs)
			}
			before := events()
			controls := strings.Repeat("\x1b[2J\a", 300<<10/5)
			for _, c := range []struct{ name, body, field string }{
				{"NUL in boot_id", `{"agent_version":"v1","boot_id":"b\u0000d"}`, "boot_id"},
				{"control characters in boot_id", `{"agent_version":"v1","boot_id":` + jsonString(termPayload) + `}`, "boot_id"},
				{"300 KB agent_version", `{"agent_version":` + jsonString(controls) + `}`, "agent_version"},
				{"NUL in agent_version", `{"agent_version":"v\u00001"}`, "agent_version"},
				{"negative uptime", `{"agent_version":"v1","uptime_seconds":-1}`, "uptime_seconds"},
				{"command id", `{"agent_version":"v1","command":{"id":"write-1\u0000","state":"running"}}`, "command.id"},
				{"command state", `{"agent_version":"v1","command":{"id":"write-1","state":"exploded"}}`, "command.state"},
				{"command progress", `{"agent_version":"v1","command":{"id":"write-1","state":"running","progress":101}}`, "command.progress"},
				{"command disk", `{"agent_version":"v1","command":{"id":"write-1","state":"failed","disk":"/dev/\u001b[2J"}}`, "command.disk"},
				{"huge command message", `{"agent_version":"v1","command":{"id":"write-1","state":"failed","message":` + jsonString(strings.Repeat("x", api.MaxAgentMessage+1)) + `}}`, "command.message"},
				{"disk name", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"disks":[{"name":"sda\u0000","path":"/dev/sda","size_bytes":1,"rotational":false,"removable":false}],"nics":[]}}`, "inventory.disks[0].name"},
				{"disk size", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"disks":[{"name":"sda","path":"/dev/sda","size_bytes":-5,"rotational":false,"removable":false}],"nics":[]}}`, "inventory.disks[0].size_bytes"},
				{"huge disk model", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"disks":[{"name":"sda","path":"/dev/sda","size_bytes":1,"model":` + jsonString(strings.Repeat("m", api.MaxAgentText+1)) + `,"rotational":false,"removable":false}],"nics":[]}}`, "inventory.disks[0].model"},
				{"cpus", `{"agent_version":"v1","inventory":{"cpus":-1,"memory_bytes":1,"disks":[],"nics":[]}}`, "inventory.cpus"},
				{"installed memory", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"installed_memory_bytes":-1,"disks":[],"nics":[]}}`, "inventory.installed_memory_bytes"},
				{"erased path", `{"agent_version":"v1","command":{"id":"erase-1","state":"succeeded","erased":[{"path":"/dev/sda\u001b[2J","size_bytes":1,"method":"metadata","verified_bytes":1}]}}`, "command.erased[0].path"},
				{"erased bytes", `{"agent_version":"v1","command":{"id":"erase-1","state":"succeeded","erased":[{"path":"/dev/sda","size_bytes":1,"method":"metadata","verified_bytes":-8}]}}`, "command.erased[0].verified_bytes"},
				{"too many erased", `{"agent_version":"v1","command":{"id":"erase-1","state":"succeeded","erased":[` + strings.TrimSuffix(strings.Repeat(`{"path":"/dev/sda","size_bytes":1,"method":"metadata","verified_bytes":1},`, api.MaxAgentItems+1), ",") + `]}}`, "command.erased"},
				{"boot mode", `{"agent_version":"v1","inventory":{"system":{"boot_mode":"floppy"},"cpus":1,"memory_bytes":1,"disks":[],"nics":[]}}`, "inventory.system.boot_mode"},
				{"nic mac", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"disks":[],"nics":[{"name":"eth0","mac":` + jsonString("52:54:00:12:34:56"+termPayload) + `,"link_up":true}]}}`, "inventory.nics[0].mac"},
				{"nic address", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"disks":[],"nics":[{"name":"eth0","mac":"52:54:00:12:34:56","link_up":true,"ipv4":["10.0.0.5\u0000"]}]}}`, "inventory.nics[0].ipv4[0]"},
				{"huge lldp system name", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"disks":[],"nics":[{"name":"eth0","mac":"52:54:00:12:34:56","link_up":true,"lldp":{"chassis_id":"c","port_id":"p","system_name":` + jsonString(strings.Repeat("s", api.MaxAgentText+1)) + `}}]}}`, "inventory.nics[0].lldp.system_name"},
				{"lldp vlan", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"disks":[],"nics":[{"name":"eth0","mac":"52:54:00:12:34:56","link_up":true,"lldp":{"chassis_id":"c","port_id":"p","vlan_id":4095}}]}}`, "inventory.nics[0].lldp.vlan_id"},
				{"too many disks", `{"agent_version":"v1","inventory":{"cpus":1,"memory_bytes":1,"disks":[` + strings.TrimSuffix(strings.Repeat(`{"name":"sda","path":"/dev/sda","size_bytes":1,"rotational":false,"removable":false},`, api.MaxAgentItems+1), ",") + `],"nics":[]}}`, "inventory.disks"},
			} {
				r := e.do("POST", api.AgentHeartbeatPath, token, c.body)
				if r.status != 400 {
					t.Errorf("%s: status %d, want 400: %.300s", c.name, r.status, r.body)
					continue
				}
				if p := r.problem(t); p.Field != c.field {
					t.Errorf("%s: field %q, want %q (%s)", c.name, p.Field, c.field, p.Detail)
				}
			}
			sess, err := e.st.GetAgentSession(ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if sess.LastSeenAt != nil || sess.BootID != "" || sess.Status != "" || sess.Inventory != "" || events() != before {
				t.Fatalf("a refused heartbeat changed something: seen %v boot_id %q status %q inventory %q, %d events (was %d)",
					sess.LastSeenAt, sess.BootID, sess.Status, sess.Inventory, events(), before)
			}

			// The outside world's text is kept, escaped: an image server's
			// reason phrase in a failed command's message, firmware strings.
			msg := "image URL http://i/x: HTTP 404 " + termPayload
			body := fmt.Sprintf(`{"agent_version":"v1","boot_id":"6a1f7c3e-2b9d-4e0a-9c4f-1d2e3f4a5b6c","uptime_seconds":12.5,
				"inventory":{"system":{"vendor":%s,"product":"P\u0000","boot_mode":"uefi"},"cpus":2,"memory_bytes":1073741824,
					"disks":[{"name":"vda","path":"/dev/vda","size_bytes":8589934592,"model":%s,"rotational":false,"removable":false}],
					"nics":[{"name":"eth0","mac":"52:54:00:12:34:56","link_up":true,"speed_mbps":1000,"ipv4":["10.0.2.15/24"],
						"lldp":{"chassis_id":"44:4c:a8:12:34:56","port_id":%s,"vlan_id":100}}]},
				"command":{"id":"write-1","state":"failed","input":true,"message":%s}}`,
				jsonString("ACME"+termPayload), jsonString("QEMU\u009b2J disk"), jsonString("Ethernet7"+termPayload), jsonString(msg))
			r := e.do("POST", api.AgentHeartbeatPath, token, body)
			if r.status != 200 {
				t.Fatalf("valid heartbeat: %d %s", r.status, r.body)
			}
			sess, err = e.st.GetAgentSession(ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			var st api.AgentCommandStatus
			if err := json.Unmarshal([]byte(sess.Status), &st); err != nil {
				t.Fatal(err)
			}
			if want := `image URL http://i/x: HTTP 404 \u001b]0;owned\u0007\u001b[2J`; st.Message != want {
				t.Errorf("stored message %q, want %q", st.Message, want)
			}
			var inv api.AgentInventory
			if err := json.Unmarshal([]byte(sess.Inventory), &inv); err != nil {
				t.Fatal(err)
			}
			if inv.System.Vendor != `ACME\u001b]0;owned\u0007\u001b[2J` || inv.System.Product != `P\u0000` || inv.Disks[0].Model != `QEMU\u009b2J disk` {
				t.Errorf("stored firmware strings %q %q %q", inv.System.Vendor, inv.System.Product, inv.Disks[0].Model)
			}
			if l := inv.NICs[0].LLDP; l == nil || l.PortID != `Ethernet7\u001b]0;owned\u0007\u001b[2J` || l.VLANID != 100 {
				t.Errorf("stored LLDP neighbour %+v: want the switch's port name escaped", l)
			}
			evs, _, err := e.st.ListEvents(ctx, n.ID, store.Page{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if strings.ContainsAny(ev.Message, "\x00\x1b\a\u009b") {
					t.Errorf("event with control characters: %q", ev.Message)
				}
			}
		})
	}
}
