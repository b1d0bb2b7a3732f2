package image

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

// DefaultCmdline is the kernel command line baked into the ISO (and
// handed to the kernel on a network boot). The kernel prints to every
// console named; /dev/console, where init's output goes, is the last one.
// The serial port comes last so that the agent's own log reaches
// serial-over-LAN and the BMC's console log, which is what operators and
// tools read (the agent copies its log to the other consoles, the screen a
// BMC's KVM shows). loglevel=4 keeps the kernel from printing its command
// line.
const DefaultCmdline = "console=tty0 console=ttyS0,115200n8 loglevel=4 panic=10"

// Where isolinux lives on a Debian host (packages isolinux and
// syslinux-common).
const (
	DefaultIsolinuxBin = "/usr/lib/ISOLINUX/isolinux.bin"
	DefaultLdlinux     = "/usr/lib/syslinux/modules/bios/ldlinux.c32"
)

// VolumeLabel names the agent's CD.
const VolumeLabel = "BAREMETAL_AGENT"

// ISOOptions say what goes onto the agent's ISO.
type ISOOptions struct {
	Kernel string
	// Initrd is the base initramfs; InitrdAppend (e.g. a ConfigArchive) is
	// concatenated after it.
	Initrd       string
	InitrdAppend []byte
	// Cmdline is the kernel command line (default DefaultCmdline).
	Cmdline string
	// IsolinuxBin and Ldlinux are syslinux's BIOS CD loader files
	// (defaults: Debian's paths).
	IsolinuxBin, Ldlinux string
	// Files are extra files on the CD, path to content.
	Files map[string][]byte
	// UEFI adds a UEFI boot entry next to the BIOS one: an EFI system
	// partition image holding the loader (Debian's signed shim and GRUB,
	// or GRUB built by grub-mkstandalone from GrubDir, defaults
	// DefaultGrubMkstandalone and DefaultGrubDir), which boots the same
	// kernel, initramfs and command line. ResolveUEFI chooses one.
	UEFI                      UEFIBoot
	GrubMkstandalone, GrubDir string
}

// BuildISO writes a bootable ISO 9660 image to out: El Torito, no
// emulation, isolinux for BIOS and, with UEFI, GRUB for UEFI firmware.
func BuildISO(out string, o ISOOptions) error {
	isolinux := orString(o.IsolinuxBin, DefaultIsolinuxBin)
	ldlinux := orString(o.Ldlinux, DefaultLdlinux)
	for _, p := range []string{isolinux, ldlinux} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("BIOS boot loader: %w (Debian: apt-get install isolinux syslinux-common)", err)
		}
	}
	cmdline := orString(o.Cmdline, DefaultCmdline)
	if strings.ContainsAny(cmdline, "\n\r") {
		return errors.New("kernel command line must be one line")
	}

	ws, err := os.MkdirTemp("", "agent-iso-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(ws) }() // a temporary dir; nothing to do if it stays
	put := func(name string, data []byte) error {
		p := filepath.Join(ws, filepath.FromSlash(strings.TrimPrefix(name, "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, 0o644)
	}
	copyIn := func(name, src string, appendix []byte) error {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return put(name, append(b, appendix...))
	}
	// isolinux looks for its config in /isolinux/ next to isolinux.bin.
	cfg := "DEFAULT agent\nPROMPT 0\nTIMEOUT 0\nLABEL agent\n  KERNEL /boot/vmlinuz\n  INITRD /boot/initrd\n  APPEND " + cmdline + "\n"
	steps := []func() error{
		func() error { return copyIn("isolinux/isolinux.bin", isolinux, nil) },
		func() error { return copyIn("isolinux/ldlinux.c32", ldlinux, nil) },
		func() error { return put("isolinux/isolinux.cfg", []byte(cfg)) },
		func() error { return copyIn("boot/vmlinuz", o.Kernel, nil) },
		func() error { return copyIn("boot/initrd", o.Initrd, o.InitrdAppend) },
	}
	for name, data := range o.Files {
		steps = append(steps, func() error { return put(name, data) })
	}
	if o.UEFI != UEFIOff {
		steps = append(steps, func() error {
			initrd, err := os.ReadFile(o.Initrd)
			if err != nil {
				return err
			}
			// Named after what it boots, so it is unique to this image
			// (the appendix holds the boot's token) yet reproducible.
			h := sha256.New()
			h.Write(initrd)
			h.Write(o.InitrdAppend)
			h.Write([]byte(cmdline))
			marker := fmt.Sprintf("boot/agent-%x.id", h.Sum(nil)[:8])
			img, err := buildEFIImage(o.UEFI, o.GrubMkstandalone, o.GrubDir, cmdline, marker)
			if err != nil {
				return err
			}
			if err := put(marker, []byte("baremetal agent CD\n")); err != nil {
				return err
			}
			if o.UEFI == UEFISecureBoot {
				// Debian's signed GRUB sources $prefix/grub.cfg, its
				// prefix being /boot/grub of the device it was started
				// from, which it sees as the whole CD (not the El Torito
				// image): the config is there. Were it missing, GRUB
				// would look for a Debian CD (/.disk/info) instead.
				cfg, err := grubConfig(cmdline, marker)
				if err != nil {
					return err
				}
				if err := put("boot/grub/grub.cfg", []byte(cfg)); err != nil {
					return err
				}
			}
			return put(efiImagePath, img)
		})
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("assemble ISO: %w", err)
		}
	}

	f, err := os.OpenFile(out, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fs, err := iso9660.Create(file.New(f, false), 0, 0, 2048, ws)
	if err != nil {
		return fmt.Errorf("create ISO: %w", err)
	}
	boot := &iso9660.ElToritoEntry{
		Platform:  iso9660.BIOS,
		Emulation: iso9660.NoEmulation,
		BootFile:  "/isolinux/isolinux.bin",
		// isolinux needs the boot info table (genisoimage's
		// -boot-info-table) to find itself on the CD, and loads in 4
		// sectors of 512 bytes (-boot-load-size 4).
		BootTable: true,
	}
	boot.SetLoadSize(4)
	entries := []*iso9660.ElToritoEntry{boot}
	if o.UEFI != UEFIOff {
		// UEFI firmware mounts this FAT image and starts
		// /EFI/BOOT/BOOTX64.EFI from it.
		entries = append(entries, &iso9660.ElToritoEntry{Platform: iso9660.EFI, Emulation: iso9660.NoEmulation, BootFile: "/" + efiImagePath})
	}
	err = fs.Finalize(iso9660.FinalizeOptions{
		RockRidge:        true,
		VolumeIdentifier: VolumeLabel,
		ElTorito: &iso9660.ElTorito{
			BootCatalog: "/isolinux/boot.cat",
			Entries:     entries,
		},
	})
	if err != nil {
		return fmt.Errorf("write ISO: %w", err)
	}
	return f.Close()
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
