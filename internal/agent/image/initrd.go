// Package image builds the deploy agent's boot media: an initramfs holding
// the agent as /init plus the kernel modules it needs, and a bootable ISO
// 9660 image (BIOS El Torito via isolinux) with the kernel and that
// initramfs, all in Go so the controller can build per-boot media on any
// host without external tools.
//
// Per-boot settings (the controller URL and the boot's token) travel as a
// second, tiny cpio archive appended to the initramfs (ConfigArchive):
// Linux unpacks concatenated archives into one root, so the base initramfs
// is built once and each boot only appends a few hundred bytes and writes
// a new ISO. The token thus never sits on the kernel command line, where
// the kernel would print it to the console.
package image

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cavaliergopher/cpio"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/kmod"
)

// DefaultModules are the drivers the agent loads: disks (virtio, NVMe,
// SATA/AHCI, SCSI and the common RAID/HBA cards), USB storage (virtual
// media shows up as a USB CD or disk), CD/ISO 9660, and common NICs. Their
// dependencies come along. Drivers that need firmware files (ice, some
// bnx2x/tg3 parts) load but may not work: firmware is not shipped.
var DefaultModules = []string{
	// First: soft dependencies modules.dep does not list, which the
	// kernel would otherwise ask a modprobe (there is none) to load:
	// libcrc32c (bnx2x, ...) needs a crc32c implementation.
	"crc32c_intel", "crc32c_generic",
	// Entropy: DHCP and TLS block in getrandom(2) until the kernel's RNG
	// is seeded; a virtio-rng (VMs) seeds it at once.
	"virtio_rng",
	// disks and controllers
	"virtio_pci", "virtio_blk", "virtio_scsi", "nvme", "ahci", "ata_piix", "sd_mod",
	"megaraid_sas", "mpt3sas", "smartpqi", "hpsa", "aacraid",
	// USB (BMC virtual media) and CDs
	"xhci_pci", "ehci_pci", "uhci_hcd", "usb_storage", "uas", "sr_mod", "isofs",
	// NICs
	"virtio_net", "e1000", "e1000e", "igb", "igc", "ixgbe", "i40e", "ice", "bnxt_en", "tg3", "bnx2x",
	"r8169", "mlx4_en", "mlx5_core", "vmxnet3",
	// UEFI variables (the inventory reports whether Secure Boot is on)
	"efivarfs",
}

// InitrdOptions say what goes into the agent's initramfs.
type InitrdOptions struct {
	// Agent is the static controller binary that becomes /init.
	Agent string
	// Kernel is the bzImage the initramfs is for; its version picks the
	// modules directory.
	Kernel string
	// ModulesDir is /lib/modules/<version> of that kernel (default: from
	// the kernel's version string). Empty and absent: no modules.
	ModulesDir string
	// Modules to include by name (default DefaultModules); names the
	// kernel does not have as modules (built in, or absent) are skipped.
	Modules []string
	// Files are extra files, path (relative to /) to content.
	Files map[string][]byte
	// CABundle is a PEM file of the CAs the agent trusts as its system's
	// (ResolveCABundle; empty: none, so https needs the boot's own CA
	// certificates). Without one an image URL on a public https server
	// fails with an unknown authority.
	CABundle string
}

// BuildInitrd writes the gzip-compressed newc initramfs to w and returns
// the modules it holds.
func BuildInitrd(w io.Writer, o InitrdOptions) ([]string, error) {
	if err := CheckStatic(o.Agent); err != nil {
		return nil, err
	}
	agent, err := os.ReadFile(o.Agent)
	if err != nil {
		return nil, fmt.Errorf("read agent binary: %w", err)
	}
	a := newArchive()
	for _, d := range []string{"dev", "proc", "sys", "run", "tmp", "etc", "etc/baremetal", "lib/modules"} {
		a.dir(d)
	}
	a.file("init", 0o755, agent)

	version, err := KernelVersion(o.Kernel)
	if err != nil {
		return nil, err
	}
	modDir := o.ModulesDir
	if modDir == "" {
		modDir = filepath.Join("/lib/modules", version)
	} else if filepath.Base(filepath.Clean(modDir)) != version {
		return nil, fmt.Errorf("modules directory %s is not for kernel %s (the kernel would refuse its modules)", modDir, version)
	}
	names := o.Modules
	if names == nil {
		names = DefaultModules
	}
	mods, err := addModules(a, modDir, version, names)
	if err != nil {
		return nil, err
	}
	if o.CABundle != "" {
		b, _, err := readCABundle(o.CABundle)
		if err != nil {
			return nil, err
		}
		a.file(caBundlePath, 0o644, b)
	}
	for _, p := range sortedKeys(o.Files) {
		a.file(p, 0o644, o.Files[p])
	}
	if err := a.writeTo(w); err != nil {
		return nil, err
	}
	return mods, nil
}

// ConfigArchive is a gzip-compressed newc archive with files (paths
// relative to /); append it to an initramfs to add or replace them.
func ConfigArchive(files map[string][]byte) ([]byte, error) {
	a := newArchive()
	for _, p := range sortedKeys(files) {
		a.file(p, 0o600, files[p])
	}
	var buf bytes.Buffer
	if err := a.writeTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addModules(a *archive, modDir, version string, names []string) ([]string, error) {
	f, err := os.Open(filepath.Join(modDir, "modules.dep"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no modules.dep in %s: install the modules of kernel %s (Debian: linux-image-%s) or pass --modules-dir", modDir, version, version)
	}
	if err != nil {
		return nil, err
	}
	deps, err := kmod.ParseDeps(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	var want []string
	for _, n := range names {
		if file, ok := deps.File(n); ok {
			want = append(want, file)
		}
	}
	order, err := deps.Order(want)
	if err != nil {
		return nil, err
	}
	base := path.Join("lib/modules", version)
	a.dir(base)
	var depBuf bytes.Buffer
	if err := deps.Write(&depBuf, order); err != nil {
		return nil, err
	}
	a.file(path.Join(base, "modules.dep"), 0o644, depBuf.Bytes())
	for _, m := range order {
		b, err := os.ReadFile(filepath.Join(modDir, m))
		if err != nil {
			return nil, fmt.Errorf("read module: %w", err)
		}
		a.file(path.Join(base, m), 0o644, b)
	}
	return order, nil
}

// CheckStatic refuses a dynamically linked binary: the initramfs has no
// libc or loader, so it would fail as /init with a bare "No such file".
func CheckStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("agent binary %s: %w", bin, err)
	}
	defer func() { _ = f.Close() }() // read only
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("agent binary %s is for %s, the agent image is x86-64", bin, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("agent binary %s is dynamically linked; build it with CGO_ENABLED=0 (make build does)", bin)
		}
	}
	return nil
}

// KernelVersion reads the version from a bzImage's setup header (the
// first word of the string "uname -r" will print).
func KernelVersion(kernel string) (string, error) {
	f, err := os.Open(kernel)
	if err != nil {
		return "", fmt.Errorf("kernel: %w", err)
	}
	defer f.Close()
	hdr := make([]byte, 0x210)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return "", fmt.Errorf("kernel %s: too short for a bzImage", kernel)
	}
	// Boot protocol: "HdrS" at 0x202, kernel_version pointer at 0x20e
	// (offset from 0x200).
	if string(hdr[0x202:0x206]) != "HdrS" {
		return "", fmt.Errorf("kernel %s is not a Linux bzImage", kernel)
	}
	off := int64(hdr[0x20e]) | int64(hdr[0x20f])<<8
	if off == 0 {
		return "", fmt.Errorf("kernel %s has no version string", kernel)
	}
	buf := make([]byte, 256)
	n, _ := f.ReadAt(buf, off+0x200)
	s := string(buf[:n])
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return "", fmt.Errorf("kernel %s has an empty version string", kernel)
	}
	return fields[0], nil
}

// archive collects newc entries; parents are added as needed.
type archive struct {
	entries []entry
	dirs    map[string]bool
}

type entry struct {
	name string
	mode cpio.FileMode
	data []byte
}

func newArchive() *archive { return &archive{dirs: map[string]bool{}} }

func (a *archive) dir(p string) {
	p = strings.Trim(path.Clean(p), "/")
	if p == "." || p == "" || a.dirs[p] {
		return
	}
	a.dir(path.Dir(p))
	a.dirs[p] = true
	a.entries = append(a.entries, entry{name: p, mode: cpio.TypeDir | 0o755})
}

func (a *archive) file(p string, perm cpio.FileMode, data []byte) {
	p = strings.Trim(path.Clean(p), "/")
	a.dir(path.Dir(p))
	a.entries = append(a.entries, entry{name: p, mode: cpio.TypeReg | perm, data: data})
}

func (a *archive) writeTo(w io.Writer) error {
	zw, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	cw := cpio.NewWriter(zw)
	// A fixed time keeps the image reproducible for the same inputs.
	mtime := time.Unix(0, 0)
	for i, e := range a.entries {
		links := 1
		if e.mode&cpio.ModeType == cpio.TypeDir {
			links = 2
		}
		hdr := &cpio.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), Links: links, Inode: int64(i + 1), ModTime: mtime}
		if err := cw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("initramfs %s: %w", e.name, err)
		}
		if _, err := cw.Write(e.data); err != nil {
			return fmt.Errorf("initramfs %s: %w", e.name, err)
		}
	}
	if err := cw.Close(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return zw.Close()
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
