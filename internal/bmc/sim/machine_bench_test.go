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
	for _, tc := range []struct {
		name    string
		uefi    image.UEFIBoot
		modules bool // the kernel's modules, as a bootable agent image has them
	}{
		{"bios-only", image.UEFIOff, false},
		{"grub", image.UEFIGrub, false},
		{"secure-boot", image.UEFISecureBoot, false},
		{"secure-boot-with-modules", image.UEFISecureBoot, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if _, err := image.ResolveUEFI(string(tc.uefi), ""); tc.uefi != image.UEFIOff && err != nil {
				b.Skip(err)
			}
			dir := b.TempDir()
			o := agentboot.Options{Kernel: kernel, ModulesDir: testvm.NoModules(b, dir, kernel), Agent: testvm.StubAgent(b, dir), Dir: dir, UEFI: tc.uefi}
			if tc.modules {
				o.ModulesDir = "" // the kernel's own, under /lib/modules
			}
			start := time.Now()
			images, err := agentboot.New(o)
			if err != nil {
				b.Skip(err) // no modules for this kernel
			}
			base := time.Since(start)
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
			b.ReportMetric(float64(base.Milliseconds()), "ms-once/base-initrd")
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
