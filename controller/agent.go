package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
)

// runAgent is the deploy agent. It only makes sense as PID 1 of the agent
// image (the kernel starts /init with no arguments; main routes PID 1
// here), so started by hand it refuses rather than remount a host's /proc.
func runAgent(args []string) error {
	if os.Getpid() != 1 {
		return errors.New("the agent runs as /init (PID 1) of the agent image; build one with 'controller agent-image'")
	}
	agent.Init(version) // never returns
	return nil
}

func runAgentImage(args []string) error {
	f := newFlags("agent-image")
	kernel := f.String("kernel", "", "Linux kernel (bzImage), e.g. Debian's /boot/vmlinuz-<version> from linux-image-amd64 (required)")
	modulesDir := f.String("modules-dir", "", "the kernel's modules (default /lib/modules/<the kernel's version>)")
	modules := f.String("modules", strings.Join(image.DefaultModules, ","), "kernel modules to include, comma-separated (their dependencies come along)")
	out := f.String("out", "", "write the bootable ISO here (BIOS with isolinux; UEFI with GRUB, see --uefi)")
	initrdOut := f.String("initrd-out", "", "also keep the base initramfs here (without --agent-config), for PXE or qemu -kernel/-initrd")
	cmdline := f.String("cmdline", image.DefaultCmdline, "kernel command line baked into the ISO")
	agentConfig := f.String("agent-config", "", "JSON file baked into the ISO's initramfs as "+agent.ConfigPath+" ({\"api\":...,\"token\":...}); the controller does this per boot")
	agentBin := f.String("agent-binary", "", "static controller binary to use as /init (default: this binary)")
	isolinux := f.String("isolinux-bin", image.DefaultIsolinuxBin, "syslinux's isolinux.bin (Debian: isolinux)")
	ldlinux := f.String("ldlinux", image.DefaultLdlinux, "syslinux's BIOS ldlinux.c32 (Debian: syslinux-common)")
	uefi := f.String("uefi", "auto", "UEFI boot of the ISO: secure-boot (Debian's signed shim and GRUB: shim-signed, grub-efi-amd64-signed; boots with Secure Boot on or off), grub (GRUB by grub-mkstandalone, grub-efi-amd64-bin; Secure Boot off only), on (either), off, or auto (the first installed of secure-boot and grub, else off)")
	grubDir := f.String("grub-dir", image.DefaultGrubDir, "GRUB's x86_64-efi modules, for --uefi")
	caBundle := f.String("ca-bundle", "auto", "the agent's trust store for https (controller, image and config drive URLs), a PEM file of CA certificates: auto ("+image.DefaultCABundle+", Debian's ca-certificates, when present), none, or a file")
	if err := f.parse(args); err != nil {
		return err
	}
	bundle, err := image.ResolveCABundle(*caBundle)
	if err != nil {
		return fmt.Errorf("--ca-bundle: %w", err)
	}
	withUEFI, err := image.ResolveUEFI(*uefi, *grubDir)
	if err != nil {
		return fmt.Errorf("--uefi: %w", err)
	}
	if withUEFI == image.UEFISecureBoot && *kernel != "" {
		if w := image.SecureBootKernelWarning(*kernel); w != "" {
			fmt.Fprintln(os.Stderr, "warning:", w)
		}
	}
	if *kernel == "" || (*out == "" && *initrdOut == "") {
		return errors.New("--kernel and --out (or --initrd-out) are required")
	}
	bin := *agentBin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this binary: %w", err)
		}
		bin = exe
	}
	var names []string
	for _, m := range strings.Split(*modules, ",") {
		if m = strings.TrimSpace(m); m != "" {
			names = append(names, m)
		}
	}
	var initrd bytes.Buffer
	mods, err := image.BuildInitrd(&initrd, image.InitrdOptions{Agent: bin, Kernel: *kernel, ModulesDir: *modulesDir, Modules: names, CABundle: bundle})
	if err != nil {
		return err
	}
	trust := "no trust store (https only with the boot's ca_certs; apt-get install ca-certificates, or --ca-bundle FILE)"
	if bundle != "" {
		n, _ := image.CABundleCount(bundle) // read once already
		trust = fmt.Sprintf("trust store: %d CA certificates from %s", n, bundle)
	}
	fmt.Fprintf(os.Stderr, "initramfs: %d modules, %.1f MiB, %s\n", len(mods), float64(initrd.Len())/(1<<20), trust)

	initrdPath := *initrdOut
	if initrdPath == "" {
		dir, err := os.MkdirTemp("", "agent-initrd-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }() // a temporary dir; nothing to do if it stays
		initrdPath = filepath.Join(dir, "initrd")
	}
	if err := os.WriteFile(initrdPath, initrd.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write initramfs: %w", err)
	}
	if *out == "" {
		return nil
	}
	var appendix []byte
	if *agentConfig != "" {
		cfg, err := os.ReadFile(*agentConfig)
		if err != nil {
			return fmt.Errorf("--agent-config: %w", err)
		}
		if appendix, err = image.ConfigArchive(map[string][]byte{agent.ConfigPath: cfg}); err != nil {
			return err
		}
	}
	if err := image.BuildISO(*out, image.ISOOptions{Kernel: *kernel, Initrd: initrdPath, InitrdAppend: appendix, Cmdline: *cmdline,
		IsolinuxBin: *isolinux, Ldlinux: *ldlinux, UEFI: withUEFI, GrubDir: *grubDir}); err != nil {
		return err
	}
	boots := "BIOS"
	switch withUEFI {
	case image.UEFISecureBoot:
		boots = "BIOS and UEFI, Secure Boot included (Debian's signed shim and GRUB)"
	case image.UEFIGrub:
		boots = "BIOS and UEFI with Secure Boot off (GRUB; apt-get install shim-signed grub-efi-amd64-signed for Secure Boot)"
	case image.UEFIOff:
		boots += " only"
		if *uefi != "off" {
			boots += " (no UEFI loader: apt-get install shim-signed grub-efi-amd64-signed, or grub-efi-amd64-bin)"
		}
	}
	fmt.Fprintf(os.Stderr, "wrote %s (boots on %s)\n", *out, boots)
	return nil
}
