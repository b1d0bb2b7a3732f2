package sim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/kdomanski/iso9660"
	"github.com/klauspost/compress/zstd"
)

// A simulated machine boots Linux the way its firmware and boot loader
// would find it, from the bytes of its boot medium and nothing else: on
// a CD, the El Torito entry of its firmware (BIOS or UEFI) and the boot
// loader's config (isolinux, or GRUB's on the CD) name the kernel, the
// initramfs and the command line; on the network, the iPXE script does.
// It never runs the kernel: it checks that it is a bzImage, unpacks the
// initramfs as the kernel would (concatenated, compressed or not, cpio
// newc archives, later files replacing earlier ones) and keeps what the
// deploy agent reads at start-up (its /etc).

// isoSector is ISO 9660's logical block size.
const isoSector = 2048

// Boot loader config files, where isolinux and GRUB look for them.
var (
	isolinuxConfigs = []string{"boot/isolinux/isolinux.cfg", "isolinux/isolinux.cfg", "boot/syslinux/syslinux.cfg", "syslinux/syslinux.cfg", "isolinux.cfg"}
	grubConfigs     = []string{"boot/grub/grub.cfg", "EFI/BOOT/grub.cfg"}
)

// maxInitramfs bounds an unpacked initramfs (the agent's, with its
// modules, is well under this).
const maxInitramfs = 1 << 30

// linuxBoot is a Linux boot as a machine found it on its medium.
type linuxBoot struct {
	// loader says where the kernel and initramfs came from, for the log.
	loader  string
	cmdline string
	// etc holds the regular files under /etc of the unpacked initramfs,
	// by path relative to / ("etc/baremetal/agent.json").
	etc map[string][]byte
	// init is /init: "" when absent, else what it is.
	init string
}

// notBootable is a medium the firmware would pass over: no boot entry for
// it, no boot loader, not a kernel. Any other error reading the medium is
// a boot that fails half way.
type notBootable struct{ msg string }

func (e *notBootable) Error() string { return e.msg }

func notBootablef(format string, args ...any) error {
	return &notBootable{fmt.Sprintf(format, args...)}
}

// readBootCD reads the Linux boot of an ISO 9660 CD as firmware in the
// given mode (uefi, else BIOS) would start it: the El Torito entry for
// that platform, then the boot loader's config. GRUB's config is read
// where it sits on the CD; a GRUB with its config built in (the agent
// ISO's grub-mkstandalone build) boots what isolinux's config names, as
// the agent's image builder writes both alike.
func readBootCD(r io.ReaderAt, uefi bool) (*linuxBoot, string, error) {
	label := ""
	img, err := iso9660.OpenImage(r)
	if err != nil {
		return nil, "", notBootablef("not an ISO 9660 CD: %v", err)
	}
	if l, err := img.Label(); err == nil {
		label = strings.TrimRight(l, "\x00 ")
	}
	bios, efi, err := elTorito(r)
	if err != nil {
		return nil, label, err
	}
	switch {
	case uefi && !efi:
		return nil, label, notBootablef("the CD has no UEFI boot entry (El Torito platform EFI), and the machine boots UEFI")
	case !uefi && !bios:
		return nil, label, notBootablef("the CD has no BIOS boot entry (El Torito platform x86), and the machine boots Legacy BIOS")
	}
	root, err := img.RootDir()
	if err != nil {
		return nil, label, fmt.Errorf("read the CD's root directory: %w", err)
	}
	var kernel, initrd, cmdline, loader string
	if uefi {
		for _, p := range grubConfigs {
			if b, err := readISOFile(root, p); err == nil {
				loader = "GRUB (/" + p + ")"
				kernel, initrd, cmdline = parseGrub(string(b))
				break
			}
		}
	}
	if loader == "" {
		for _, p := range isolinuxConfigs {
			if b, err := readISOFile(root, p); err == nil {
				loader = "isolinux (/" + p + ")"
				kernel, initrd, cmdline = parseIsolinux(string(b))
				break
			}
		}
	}
	if loader == "" {
		return nil, label, notBootablef("no boot loader config on the CD (isolinux.cfg or grub.cfg)")
	}
	if kernel == "" {
		return nil, label, fmt.Errorf("%s names no kernel", loader)
	}
	read := func(what, p string) ([]byte, error) {
		b, err := readISOFile(root, p)
		if err != nil {
			return nil, fmt.Errorf("%s names %s %s, which the CD does not hold: %w", loader, what, p, err)
		}
		return b, nil
	}
	k, err := read("kernel", kernel)
	if err != nil {
		return nil, label, err
	}
	if err := checkBzImage(k); err != nil {
		return nil, label, err
	}
	lb := &linuxBoot{loader: loader, cmdline: cmdline}
	if initrd != "" {
		b, err := read("initramfs", initrd)
		if err != nil {
			return nil, label, err
		}
		if err := lb.unpack(b); err != nil {
			return nil, label, err
		}
	}
	return lb, label, nil
}

// elTorito reports whether the CD has a bootable El Torito entry for BIOS
// (platform 0, x86) and for UEFI (platform 0xEF): the Boot Record volume
// descriptor points at the boot catalog, a validation entry, the default
// entry (for the validation entry's platform), then sections of entries,
// each section for one platform.
func elTorito(r io.ReaderAt) (bios, efi bool, err error) {
	buf := make([]byte, isoSector)
	catalog := int64(-1)
	for sector := int64(16); sector < 16+64; sector++ {
		if _, err := r.ReadAt(buf, sector*isoSector); err != nil {
			return false, false, notBootablef("read the CD's volume descriptors: %v", err)
		}
		if string(buf[1:6]) != "CD001" {
			return false, false, notBootablef("not an ISO 9660 CD")
		}
		if buf[0] == 255 {
			break
		}
		if buf[0] == 0 && strings.TrimRight(string(buf[7:39]), "\x00 ") == "EL TORITO SPECIFICATION" {
			catalog = int64(binary.LittleEndian.Uint32(buf[0x47:]))
			break
		}
	}
	if catalog < 0 {
		return false, false, notBootablef("the CD is not bootable (no El Torito boot record)")
	}
	if _, err := r.ReadAt(buf, catalog*isoSector); err != nil {
		return false, false, notBootablef("read the CD's boot catalog: %v", err)
	}
	if buf[0] != 1 || buf[30] != 0x55 || buf[31] != 0xaa {
		return false, false, notBootablef("the CD's El Torito boot catalog is invalid")
	}
	mark := func(platform byte) {
		switch platform {
		case 0:
			bios = true
		case 0xef:
			efi = true
		}
	}
	if buf[32] == 0x88 {
		mark(buf[1])
	}
	for off := 64; off+32 <= len(buf); {
		hdr := buf[off]
		if hdr != 0x90 && hdr != 0x91 {
			break
		}
		platform, n := buf[off+1], int(binary.LittleEndian.Uint16(buf[off+2:]))
		off += 32
		for i := 0; i < n && off+32 <= len(buf); off += 32 {
			if buf[off] == 0x44 {
				continue // an extension of the entry before
			}
			if buf[off] == 0x88 {
				mark(platform)
			}
			i++
		}
		if hdr == 0x91 {
			break
		}
	}
	return bios, efi, nil
}

// readISOFile reads the file at p (relative to the root) of a CD, names
// compared as Linux shows them: Rock Ridge names as they are, plain ISO
// 9660 ones without their ";1" and in any case.
func readISOFile(root *iso9660.File, p string) ([]byte, error) {
	dir := root
	parts := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	for i, name := range parts {
		children, err := dir.GetChildren()
		if err != nil {
			return nil, err
		}
		var next *iso9660.File
		for _, c := range children {
			n := c.Name()
			if j := strings.IndexByte(n, ';'); j >= 0 {
				n = n[:j]
			}
			if strings.EqualFold(n, name) {
				next = c
				break
			}
		}
		if next == nil {
			return nil, fmt.Errorf("no /%s", strings.Join(parts[:i+1], "/"))
		}
		if i < len(parts)-1 {
			if !next.IsDir() {
				return nil, fmt.Errorf("/%s is not a directory", strings.Join(parts[:i+1], "/"))
			}
			dir = next
			continue
		}
		if next.IsDir() {
			return nil, fmt.Errorf("/%s is a directory", p)
		}
		return io.ReadAll(next.Reader())
	}
	return nil, fmt.Errorf("no /%s", p)
}

// parseIsolinux reads the default entry of an isolinux config (else its
// first LABEL): KERNEL or LINUX, INITRD, APPEND (whose initrd= is
// isolinux's, not the kernel's).
func parseIsolinux(cfg string) (kernel, initrd, cmdline string) {
	type entry struct{ kernel, initrd, appendLine string }
	labels := map[string]*entry{}
	var order []string
	var cur *entry
	def := ""
	sc := bufio.NewScanner(strings.NewReader(cfg))
	for sc.Scan() {
		key, val, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		val = strings.TrimSpace(val)
		switch strings.ToUpper(key) {
		case "DEFAULT":
			def = val
		case "LABEL":
			cur = &entry{}
			labels[val] = cur
			order = append(order, val)
		case "KERNEL", "LINUX":
			if cur != nil {
				cur.kernel = val
			}
		case "INITRD":
			if cur != nil {
				cur.initrd = val
			}
		case "APPEND":
			if cur != nil {
				cur.appendLine = val
			}
		}
	}
	e := labels[def]
	if e == nil && len(order) > 0 {
		e = labels[order[0]]
	}
	if e == nil {
		return "", "", ""
	}
	var args []string
	initrd = e.initrd
	for _, a := range strings.Fields(e.appendLine) {
		if v, ok := strings.CutPrefix(a, "initrd="); ok {
			initrd = v
			continue
		}
		args = append(args, a)
	}
	return e.kernel, initrd, strings.Join(args, " ")
}

// parseGrub reads the first linux and initrd commands of a GRUB config,
// unquoting single-quoted words.
func parseGrub(cfg string) (kernel, initrd, cmdline string) {
	sc := bufio.NewScanner(strings.NewReader(cfg))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "linux", "linuxefi":
			if kernel == "" {
				kernel = f[1]
				args := make([]string, 0, len(f)-2)
				for _, a := range f[2:] {
					args = append(args, strings.Trim(a, "'"))
				}
				cmdline = strings.Join(args, " ")
			}
		case "initrd", "initrdefi":
			if initrd == "" {
				initrd = f[1]
			}
		}
	}
	return kernel, initrd, cmdline
}

// checkBzImage checks the Linux boot protocol's header ("HdrS" at 0x202),
// which every boot loader reads first.
func checkBzImage(k []byte) error {
	if len(k) < 0x210 || string(k[0x202:0x206]) != "HdrS" {
		return errors.New("the kernel is not a Linux bzImage")
	}
	return nil
}

// unpack unpacks an initramfs into b as the kernel does: cpio newc
// archives one after another, each plain or compressed (gzip and zstd
// here; the kernel knows more), zero padding between them; a later file
// replaces an earlier one of the same name.
func (b *linuxBoot) unpack(data []byte) error {
	if b.etc == nil {
		b.etc = map[string][]byte{}
	}
	total := 0
	for len(data) > 0 {
		if data[0] == 0 {
			data = data[1:]
			continue
		}
		var plain []byte
		switch {
		case bytes.HasPrefix(data, []byte("070701")), bytes.HasPrefix(data, []byte("070702")):
			n, err := b.cpio(data)
			if err != nil {
				return err
			}
			data = data[n:]
			continue
		case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
			br := bytes.NewReader(data)
			zr, err := gzip.NewReader(br)
			if err != nil {
				return fmt.Errorf("initramfs: %w", err)
			}
			zr.Multistream(false)
			plain, err = io.ReadAll(io.LimitReader(zr, maxInitramfs+1))
			if err != nil {
				return fmt.Errorf("initramfs: gzip: %w", err)
			}
			data = data[len(data)-br.Len():]
		case bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}):
			zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1))
			if err != nil {
				return fmt.Errorf("initramfs: %w", err)
			}
			plain, err = io.ReadAll(io.LimitReader(zr, maxInitramfs+1))
			zr.Close()
			if err != nil {
				return fmt.Errorf("initramfs: zstd: %w", err)
			}
			data = nil // a zstd stream runs to the end here
		default:
			return fmt.Errorf("initramfs: unknown format at a %d-byte remainder (want cpio newc, gzip or zstd)", len(data))
		}
		if total += len(plain); total > maxInitramfs {
			return fmt.Errorf("initramfs: larger than %d MiB unpacked", maxInitramfs>>20)
		}
		for len(plain) > 0 {
			if plain[0] == 0 {
				plain = plain[1:]
				continue
			}
			n, err := b.cpio(plain)
			if err != nil {
				return err
			}
			plain = plain[n:]
		}
	}
	return nil
}

// cpio reads one newc archive from the start of data up to its trailer
// and returns its length.
func (b *linuxBoot) cpio(data []byte) (int, error) {
	const hdrLen = 110
	off := 0
	pad4 := func(n int) int { return (n + 3) &^ 3 }
	for {
		if off+hdrLen > len(data) {
			return 0, errors.New("initramfs: truncated cpio archive")
		}
		h := data[off : off+hdrLen]
		if m := string(h[:6]); m != "070701" && m != "070702" {
			return 0, fmt.Errorf("initramfs: bad cpio magic %q", m)
		}
		field := func(i int) (int, error) {
			v, err := strconv.ParseUint(string(h[6+8*i:6+8*i+8]), 16, 32)
			return int(v), err
		}
		mode, err1 := field(1)
		size, err2 := field(6)
		nameLen, err3 := field(11)
		if err := errors.Join(err1, err2, err3); err != nil || nameLen == 0 {
			return 0, errors.New("initramfs: bad cpio header")
		}
		nameEnd := off + hdrLen + nameLen
		dataStart := pad4(nameEnd)
		dataEnd := dataStart + size
		if dataEnd > len(data) {
			return 0, errors.New("initramfs: truncated cpio archive")
		}
		name := strings.TrimRight(string(data[off+hdrLen:nameEnd]), "\x00")
		off = pad4(dataEnd)
		if name == "TRAILER!!!" {
			return min(off, len(data)), nil
		}
		const typeMask, regular = 0o170000, 0o100000
		p := strings.TrimPrefix(path.Clean("/"+name), "/")
		switch {
		case p == "init":
			b.init = describeInit(mode, data[dataStart:dataEnd])
		case strings.HasPrefix(p, "etc/") && mode&typeMask == regular:
			b.etc[p] = data[dataStart:dataEnd]
		case strings.HasPrefix(p, "etc/"):
			delete(b.etc, p) // replaced by a directory, link or device
		}
	}
}

// describeInit says what /init is: "static" for a static x86-64
// executable (what the agent image holds), else why the kernel could not
// run it.
func describeInit(mode int, data []byte) string {
	const typeMask, regular = 0o170000, 0o100000
	if mode&typeMask != regular {
		return "not a regular file"
	}
	if mode&0o111 == 0 {
		return "not executable"
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "not an ELF executable"
	}
	if f.Machine != elf.EM_X86_64 {
		return "an executable for " + f.Machine.String()
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "dynamically linked (the initramfs has no loader)"
		}
	}
	return "static"
}
