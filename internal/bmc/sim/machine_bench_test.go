package sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agentboot"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testvm"
)

// BenchmarkAgentISOPerBoot is what serving a simulated machine's agent
// boot costs the controller: one per-boot ISO from its builder (a new
// token each time, so never from its cache), with a real kernel file, a
// stub /init and no modules (as testenv.Options.SimAgent builds it), for
// each UEFI loader choice.
func BenchmarkAgentISOPerBoot(b *testing.B) {
	kernel := testvm.RequireKernel(b)
	testvm.RequireISOLinux(b)
	for _, uefi := range []image.UEFIBoot{image.UEFIOff, image.UEFIGrub, image.UEFISecureBoot} {
		name := string(uefi)
		if uefi == image.UEFIOff {
			name = "bios-only"
		}
		b.Run(name, func(b *testing.B) {
			if _, err := image.ResolveUEFI(string(uefi), ""); uefi != image.UEFIOff && err != nil {
				b.Skip(err)
			}
			dir := b.TempDir()
			images, err := agentboot.New(agentboot.Options{Kernel: kernel, ModulesDir: testvm.NoModules(b, dir, kernel), Agent: testvm.StubAgent(b, dir), Dir: dir, UEFI: uefi})
			if err != nil {
				b.Fatal(err)
			}
			var size int
			b.ResetTimer()
			for i := range b.N {
				iso, err := images.ISO(context.Background(), agent.Config{API: "http://127.0.0.1:1", Token: fmt.Sprintf("agt_bench-%d", i)})
				if err != nil {
					b.Fatal(err)
				}
				size = len(iso)
			}
			b.ReportMetric(float64(size)/(1<<20), "MiB/iso")
		})
	}
}

// BenchmarkMachineAgentBoot is a simulated machine's agent boot: from
// the BMC's reset to the agent's first heartbeat (the firmware fetching
// the ISO, reading it, unpacking its initramfs, laying out the machine
// and starting the agent).
func BenchmarkMachineAgentBoot(b *testing.B) {
	ctl := newFakeController(b)
	uefi := autoUEFI(b)
	images := agentImages(b, uefi)
	iso, err := images.ISO(context.Background(), ctl.config())
	if err != nil {
		b.Fatal(err)
	}
	isoURL := ctl.put("/agent.iso", iso)
	f, c := machineFleet(b, sim.Options{Machine: &sim.MachineOptions{Dir: b.TempDir(), Legacy: uefi == image.UEFIOff}})
	ctx := context.Background()
	if err := c.(bmc.VirtualMedia).InsertMedia(ctx, isoURL); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		n := len(ctl.heartbeats())
		if err := c.SetBootDevice(ctx, bmc.BootCD, false); err != nil {
			b.Fatal(err)
		}
		if err := c.SetPower(ctx, bmc.ActionReset); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(ctl.heartbeats()) == n {
			if time.Now().After(deadline) {
				st, _ := f.Machine("1")
				b.Fatalf("no heartbeat: %+v", st)
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric(float64(len(iso))/(1<<20), "MiB/iso")
}
