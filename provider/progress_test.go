package provider

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// A deploy's polls log one line per change of what they show, the node's
// name looked up once.
func TestDeployProgressLogsEachStepOnce(t *testing.T) {
	var buf bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &buf)
	lookups := 0
	p := &deployProgress{started: time.Now(), nodeName: func(context.Context, string) string { lookups++; return "rack1-u12" }}
	booted := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	base := api.Instance{Name: "web-1", NodeID: "n-1", State: "deploying", DeployTimeout: "30m"}
	steps := []func(i *api.Instance){
		func(i *api.Instance) { i.ObservedPowerState = "off" },
		func(i *api.Instance) { i.ObservedPowerState = "off" }, // unchanged: no line
		func(i *api.Instance) {
			i.ObservedPowerState = "off"
			i.LastError = "BMC unreachable: connection refused"
		},
		func(i *api.Instance) { i.ObservedPowerState = "on"; i.BootedAt = &booted },
		func(i *api.Instance) { i.ObservedPowerState = "on"; i.BootedAt = &booted },
		func(i *api.Instance) {
			i.ObservedPowerState = "on"
			i.BootedAt = &booted
			i.Ready = true
			i.State = "active"
		},
	}
	for _, f := range steps {
		in := base
		f(&in)
		p.observe(ctx, &in)
	}
	entries, err := tflogtest.MultilineJSONDecode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e["@message"].(string))
	}
	want := []string{
		"instance web-1: node chosen: rack1-u12",
		"instance web-1: deploying on node rack1-u12: setting the boot device and powering on (power off)",
		"instance web-1: deploying on node rack1-u12; the controller is retrying: BMC unreachable: connection refused",
		"instance web-1: node rack1-u12 powered on at 2026-12-03T10:00:00Z; waiting for the OS to call the readiness callback (deploy_timeout 30m)",
		"instance web-1: active on node rack1-u12",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if lookups != 1 {
		t.Fatalf("node name looked up %d times, want once", lookups)
	}
}
