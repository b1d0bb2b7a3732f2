package agent

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// termPayload is issue #26's: it retitles and clears the terminal of
// whoever prints it raw.
const termPayload = "\x1b]0;owned\a\x1b[2J"

// hostileImageServer answers every request with a 404 whose reason phrase
// is termPayload, as an image server its user controls may.
func hostileImageServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_, _ = bufio.NewReader(conn).ReadString('\n')
				_, _ = conn.Write([]byte("HTTP/1.1 404 " + termPayload + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}()
		}
	}()
	return "http://" + l.Addr().String() + "/images/disk.raw"
}

// TestReportsAreSafeText: what the agent reports keeps the controller's
// bounds and carries no control characters: a failed command's message
// quoting an image server's hostile reason phrase is escaped (issue #26,
// item 20), as are firmware strings, and oversized text and lists are
// cut to what the controller accepts (item 19), so an honest agent's
// report is never refused.
func TestReportsAreSafeText(t *testing.T) {
	m := newMachine(t, testDisk{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib})
	c := newTestController(t)
	cmd := api.AgentCommand{ID: "cmd-hostile", Kind: api.AgentWriteImage, Image: &api.Image{URL: hostileImageServer(t)}}
	c.setReply(handOut(cmd))
	log, _ := testLogger()
	runAgent(t, c, m.runner(log), 10*time.Millisecond)
	hb, _ := c.waitFor("failed", 0, status(cmd.ID, api.AgentCommandFailed))
	if st := hb.Command; !strings.Contains(st.Message, `404 \u001b]0;owned\u0007\u001b[2J`) || strings.ContainsAny(st.Message, "\x1b\a") {
		t.Errorf("reported message %q: want the reason phrase escaped", st.Message)
	}

	big := strings.Repeat("é", api.MaxAgentMessage)
	disks := make([]api.AgentDisk, api.MaxAgentItems+5)
	for i := range disks {
		disks[i] = api.AgentDisk{Name: "sda", Path: "/dev/sda", Model: "QEMU" + termPayload + strings.Repeat("m", 300)}
	}
	report := api.AgentHeartbeat{
		AgentVersion: "test",
		Inventory: &api.AgentInventory{
			System: api.AgentSystem{Vendor: "ACME\x00" + termPayload, Product: big, Serial: "S\u009b1"},
			Disks:  disks,
			NICs: []api.AgentNIC{{Name: "eth0", MAC: "52:54:00:12:34:56", LLDP: &api.AgentLLDP{ChassisID: "c",
				PortID: "Eth1" + termPayload, SystemName: strings.Repeat("s", 300), PortDescription: "d\n", VLANID: 5000}}},
		},
		Command: &api.AgentCommandStatus{ID: "c", State: api.AgentCommandFailed, Message: "two\nlines " + big},
	}
	boundReport(&report)
	inv := report.Inventory
	for what, s := range map[string]string{"vendor": inv.System.Vendor, "product": inv.System.Product, "serial": inv.System.Serial, "model": inv.Disks[0].Model} {
		if len(s) > api.MaxAgentText || strings.ContainsAny(s, "\x00\x1b\a\u009b") {
			t.Errorf("%s: %d bytes, %q", what, len(s), s)
		}
	}
	if inv.System.Vendor != `ACME\u0000\u001b]0;owned\u0007\u001b[2J` {
		t.Errorf("vendor %q", inv.System.Vendor)
	}
	if l := inv.NICs[0].LLDP; l.PortID != `Eth1\u001b]0;owned\u0007\u001b[2J` || len(l.SystemName) != api.MaxAgentText ||
		l.PortDescription != "d " || l.VLANID != 0 {
		t.Errorf("LLDP %+v: want the switch's text escaped and bounded, the VLAN in range", *l)
	}
	if len(inv.Disks) != api.MaxAgentItems {
		t.Errorf("%d disks reported, want at most %d", len(inv.Disks), api.MaxAgentItems)
	}
	if msg := report.Command.Message; len(msg) > api.MaxAgentMessage || !strings.HasPrefix(msg, "two lines éé") {
		t.Errorf("message of %d bytes: %.40q", len(msg), msg)
	}
}
