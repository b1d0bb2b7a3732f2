package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
)

// TestConsoleInBrowser drives the console page (e2e/console.mjs) in a real
// headless Chromium against a real controller and an IPMI node on
// ipmi_sim: an admin opens it from the node's page and has the keyboard,
// a second page watches read-only; what the machine prints on its serial
// port shows in both, the writer's keys reach the serial port and the
// watcher's do not; no token in a URL, no BMC password in anything the
// browser receives, no CSP violation; each session is an event.
func TestConsoleInBrowser(t *testing.T) {
	node, chromium := browserTools(t)
	ipmisim.SkipIfUnavailable(t)
	env := testenv.Start(t, testenv.Options{Systems: 1, BMCTimeout: 5 * time.Second})
	bmc := ipmisim.Start(t)
	out := call(t, env.URL, env.AdminToken, "POST", "/v1/nodes", fmt.Sprintf(
		`{"name":"con-0","driver":"ipmi","resource_class":"vm","bmc":{"address":%q,"username":%q,"password":%q,"cipher_suite":3}}`,
		bmc.Address(), bmc.Username, bmc.Password), http.StatusCreated)
	nodeID, _ := out["id"].(string)

	shots := os.Getenv(ScreenshotsEnv)
	if shots == "" {
		shots = filepath.Join("e2e", "screenshots")
	}
	shots, err := filepath.Abs(filepath.Join(shots, t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(shots)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "console.mjs")
	cmd.Dir = "e2e"
	cmd.Env = append(os.Environ(), "BASE_URL="+env.URL, "ADMIN_TOKEN="+env.AdminToken, "NODE_ID="+nodeID, "NODE_NAME=con-0",
		"BMC_PASSWORD="+bmc.Password, "CHROMIUM="+chromium, "SCREENSHOTS="+shots)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The machine's side: the script asks, the serial port does.
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		verb, arg, _ := strings.Cut(line, " ")
		var text string
		if verb == "PRINT" || verb == "INPUT" {
			if err := json.Unmarshal([]byte(arg), &text); err != nil {
				t.Fatalf("script line %q: %v", line, err)
			}
		}
		reply := "ok"
		switch verb {
		case "PRINT":
			if _, err := bmc.Serial.Write([]byte(text)); err != nil {
				reply = "error " + err.Error()
			}
		case "INPUT":
			if err := bmc.Serial.WaitInput(text, 20*time.Second); err != nil {
				reply = "error " + err.Error()
			}
		default:
			t.Log(line)
			continue
		}
		if _, err := io.WriteString(stdin, reply+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	t.Logf("browser script (%s); stderr:\n%s", time.Since(start).Round(time.Millisecond), stderr.String())
	if err != nil {
		t.Fatalf("browser script failed: %v (screenshots in %s)", err, shots)
	}
	if in := bmc.Serial.Input(); strings.Contains(in, "intruder") {
		t.Errorf("the watcher's keys reached the machine: %q", in)
	}

	// Both sessions are events: opened, and closed once the browser went.
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs, _, err := env.App.Store.ListEvents(context.Background(), nodeID, store.Page{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		opened, closed := 0, 0
		for _, e := range evs {
			switch e.Type {
			case "console_opened":
				opened++
			case "console_closed":
				closed++
			}
			fmt.Fprintf(&text, "%s %s %s\n", e.Actor, e.Type, e.Message)
		}
		if strings.Contains(text.String(), bmc.Password) {
			t.Fatalf("the BMC password is in the events:\n%s", text.String())
		}
		if opened == 2 && closed == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("console events: %d opened, %d closed:\n%s", opened, closed, text.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
