package image

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cavaliergopher/cpio"
	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat12"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

// fakeKernel writes the part of a bzImage setup header KernelVersion reads.
func fakeKernel(t *testing.T, version string) string {
	b := make([]byte, 0x400)
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x20e:], 0x100) // string at 0x300
	copy(b[0x300:], version+" (builder@host) #1 SMP\x00")
	p := filepath.Join(t.TempDir(), "vmlinuz")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// staticBinary builds a tiny static program (the agent binary stand-in).
func staticBinary(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", "tiny", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build static binary: %v\n%s", err, out)
	}
	return filepath.Join(dir, "tiny")
}

func fakeModules(t *testing.T, version string) string {
	dir := filepath.Join(t.TempDir(), version)
	files := map[string]string{
		"modules.dep": "kernel/drivers/virtio/virtio.ko:\n" +
			"kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko\n" +
			"kernel/drivers/usb/storage/usb-storage.ko.xz:\n" +
			"kernel/fs/btrfs/btrfs.ko:\n",
		"kernel/drivers/virtio/virtio.ko":              "virtio",
		"kernel/drivers/block/virtio_blk.ko":           "virtio_blk",
		"kernel/drivers/usb/storage/usb-storage.ko.xz": "usb-storage",
		"kernel/fs/btrfs/btrfs.ko":                     "btrfs",
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readInitrd unpacks concatenated gzip'd newc archives as the kernel does:
// later entries replace earlier ones.
func readInitrd(t *testing.T, b []byte) (files map[string]string, order []string) {
	files = map[string]string{}
	src := bytes.NewReader(b)
	zr, err := gzip.NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	for {
		zr.Multistream(false)
		r := cpio.NewReader(zr)
		for {
			h, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(r)
			if h.Mode.IsRegular() {
				files[h.Name] = string(data)
				order = append(order, h.Name)
			}
		}
		_, _ = io.Copy(io.Discard, zr)
		if err := zr.Reset(src); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	return files, order
}

func TestInitrdHoldsAgentModulesAndAppendedConfig(t *testing.T) {
	const ver = "6.1.0-99-amd64"
	kernel, modDir, agentBin := fakeKernel(t, ver), fakeModules(t, ver), staticBinary(t)
	var buf bytes.Buffer
	mods, err := BuildInitrd(&buf, InitrdOptions{Agent: agentBin, Kernel: kernel, ModulesDir: modDir,
		Modules: []string{"usb_storage", "virtio_blk", "not_a_module"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kernel/drivers/usb/storage/usb-storage.ko.xz", "kernel/drivers/virtio/virtio.ko", "kernel/drivers/block/virtio_blk.ko"}
	if strings.Join(mods, " ") != strings.Join(want, " ") {
		t.Fatalf("modules %v, want %v", mods, want)
	}
	cfg, err := ConfigArchive(map[string][]byte{"/etc/baremetal/agent.json": []byte(`{"token":"t"}`)})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := readInitrd(t, append(buf.Bytes(), cfg...))
	bin, _ := os.ReadFile(agentBin)
	if files["init"] != string(bin) {
		t.Error("init is not the agent binary")
	}
	base := "lib/modules/" + ver + "/"
	if files[base+"kernel/drivers/block/virtio_blk.ko"] != "virtio_blk" || files[base+"kernel/drivers/usb/storage/usb-storage.ko.xz"] != "usb-storage" {
		t.Errorf("modules missing: %v", keys(files))
	}
	if _, ok := files[base+"kernel/fs/btrfs/btrfs.ko"]; ok {
		t.Error("a module nobody asked for is in the image")
	}
	if dep := files[base+"modules.dep"]; !strings.HasPrefix(dep, "kernel/drivers/usb/storage/usb-storage.ko.xz:\n") || strings.Contains(dep, "btrfs") {
		t.Errorf("modules.dep subset:\n%s", dep)
	}
	if files["etc/baremetal/agent.json"] != `{"token":"t"}` {
		t.Errorf("appended config not in the unpacked root: %v", keys(files))
	}
}

func TestInitrdRefusesMismatchedModulesAndDynamicAgent(t *testing.T) {
	kernel, agentBin := fakeKernel(t, "6.1.0-99-amd64"), staticBinary(t)
	_, err := BuildInitrd(io.Discard, InitrdOptions{Agent: agentBin, Kernel: kernel, ModulesDir: fakeModules(t, "6.1.0-1-amd64")})
	if err == nil || !strings.Contains(err.Error(), "not for kernel 6.1.0-99-amd64") {
		t.Fatalf("mismatched modules: err = %v", err)
	}
	dyn, err := exec.LookPath("ls")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckStatic(dyn); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("CheckStatic(%s) = %v, want a refusal naming CGO_ENABLED=0", dyn, err)
	}
	if err := CheckStatic(agentBin); err != nil {
		t.Fatalf("CheckStatic(static) = %v", err)
	}
}

func TestISOHasBootCatalogKernelAndInitrd(t *testing.T) {
	dir := t.TempDir()
	loader := func(name, content string) string {
		p := filepath.Join(dir, name)
		// isolinux.bin needs room for the boot info table at 8..64.
		if err := os.WriteFile(p, []byte(content+strings.Repeat("\x00", 2048)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kernel := fakeKernel(t, "6.1.0-99-amd64")
	initrd := filepath.Join(dir, "initrd")
	if err := os.WriteFile(initrd, []byte("BASE"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "agent.iso")
	err := BuildISO(out, ISOOptions{Kernel: kernel, Initrd: initrd, InitrdAppend: []byte("+CFG"), Cmdline: "console=ttyS0 x=1",
		IsolinuxBin: loader("isolinux.bin", "ISOLINUX"), Ldlinux: loader("ldlinux.c32", "LDLINUX"),
		Files: map[string][]byte{"baremetal/info.txt": []byte("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Sector 17 is the El Torito boot record volume descriptor.
	if br := raw[17*2048 : 17*2048+39]; !bytes.Contains(br, []byte("EL TORITO SPECIFICATION")) {
		t.Fatalf("no El Torito boot record at sector 17: %q", br)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// go-diskfs reads the Rock Ridge names, as Linux mounts them.
	fs, err := iso9660.Read(file.New(f, true), int64(len(raw)), 0, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if label := strings.TrimRight(fs.Label(), "\x00 "); label != VolumeLabel {
		t.Errorf("label %q", label)
	}
	got := map[string]string{}
	for _, p := range []string{"boot/initrd", "boot/vmlinuz", "isolinux/isolinux.cfg", "isolinux/isolinux.bin", "isolinux/ldlinux.c32", "baremetal/info.txt"} {
		b, err := fs.ReadFile(p)
		if err != nil {
			t.Errorf("read %s from the ISO: %v", p, err)
		}
		got[p] = string(b)
	}
	if got["boot/initrd"] != "BASE+CFG" {
		t.Errorf("boot/initrd = %q, want the base with the appendix", got["boot/initrd"])
	}
	if cfg := got["isolinux/isolinux.cfg"]; !strings.Contains(cfg, "APPEND console=ttyS0 x=1\n") || !strings.Contains(cfg, "KERNEL /boot/vmlinuz") {
		t.Errorf("isolinux.cfg:\n%s", cfg)
	}
	if got["baremetal/info.txt"] != "hello" {
		t.Errorf("extra file missing: %v", keys(got))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// require fails the test in CI (which installs what the tests need) and
// skips it elsewhere when err says something is missing.
func require(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// With UEFI the ISO carries a second El Torito entry, for EFI, pointing at
// a FAT image whose removable-media loader is GRUB, or shim with Debian's
// signed GRUB beside it and the config where that GRUB looks; a marker
// file unique to the image lets GRUB find its CD. No scratch file of the
// build lands on the CD.
func TestISOWithUEFIEntry(t *testing.T) {
	for _, boot := range []UEFIBoot{UEFIGrub, UEFISecureBoot} {
		t.Run(string(boot), func(t *testing.T) {
			if boot == UEFIGrub {
				require(t, UEFIAvailable("", ""))
			} else {
				require(t, SecureBootAvailable("", ""))
			}
			checkUEFIISO(t, boot)
		})
	}
}

func checkUEFIISO(t *testing.T, boot UEFIBoot) {
	dir := t.TempDir()
	loader := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name+strings.Repeat("\x00", 2048)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kernel := fakeKernel(t, "6.1.0-99-amd64")
	initrd := filepath.Join(dir, "initrd")
	if err := os.WriteFile(initrd, []byte("BASE"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "agent.iso")
	err := BuildISO(out, ISOOptions{Kernel: kernel, Initrd: initrd, Cmdline: "console=ttyS0 x=$y;z", UEFI: boot,
		IsolinuxBin: loader("isolinux.bin"), Ldlinux: loader("ldlinux.c32")})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	files := readISO(t, out)
	// The boot catalog: validation entry, the BIOS default entry, then a
	// final section header for platform 0xEF and its entry.
	cat := files["isolinux/boot.cat"]
	if len(cat) < 0x80 || cat[0x20] != 0x88 || cat[0x40] != 0x91 || cat[0x41] != 0xef || cat[0x60] != 0x88 {
		t.Fatalf("boot catalog has no EFI section after the BIOS entry: % x", cat[:min(len(cat), 0x80)])
	}
	efiLBA := binary.LittleEndian.Uint32(cat[0x68:0x6c])
	img, ok := files[efiImagePath]
	if !ok {
		t.Fatalf("no %s on the CD", efiImagePath)
	}
	if !bytes.Equal(raw[int(efiLBA)*2048:int(efiLBA)*2048+len(img)], img) {
		t.Errorf("the EFI entry points at sector %d, which does not hold %s", efiLBA, efiImagePath)
	}
	// The image is FAT12 (UEFI tells FAT types by cluster count) with
	// the removable-media loader, a PE image.
	espPath := filepath.Join(dir, "efi.img")
	if err := os.WriteFile(espPath, img, 0o644); err != nil {
		t.Fatal(err)
	}
	espFile, err := os.Open(espPath)
	if err != nil {
		t.Fatal(err)
	}
	defer espFile.Close()
	esp, err := fat12.Read(file.New(espFile, true), int64(len(img)), 0, 512)
	if err != nil {
		t.Fatalf("EFI image is not FAT12: %v", err)
	}
	bootx64, err := esp.ReadFile("/EFI/BOOT/BOOTX64.EFI")
	if err != nil {
		t.Fatal(err)
	}
	if len(bootx64) < 64<<10 || string(bootx64[:2]) != "MZ" {
		t.Errorf("BOOTX64.EFI is %d bytes starting %q, want a PE image", len(bootx64), bootx64[:min(len(bootx64), 2)])
	}
	if boot == UEFISecureBoot {
		// shim, then the signed GRUB it starts, then the config that
		// GRUB sources from the device it came from.
		for p, want := range map[string]string{"/EFI/BOOT/BOOTX64.EFI": DefaultShim, "/EFI/BOOT/grubx64.efi": DefaultSignedGrub} {
			got, err := esp.ReadFile(p)
			wantB, _ := os.ReadFile(want)
			if err != nil || !bytes.Equal(got, wantB) {
				t.Errorf("%s is not %s (%v)", p, want, err)
			}
		}
		cfg, err := esp.ReadFile("/boot/grub/grub.cfg")
		if err != nil || !bytes.Contains(cfg, []byte("search --no-floppy --set=root --file /boot/agent-")) {
			t.Errorf("/boot/grub/grub.cfg of the ESP: %q, %v", cfg, err)
		}
	}
	// Debian's signed GRUB reads its config from /boot/grub of the CD.
	if boot == UEFISecureBoot {
		if cfg := files["boot/grub/grub.cfg"]; !bytes.Contains(cfg, []byte("search --no-floppy --set=root --file /boot/agent-")) {
			t.Errorf("/boot/grub/grub.cfg of the CD: %q", cfg)
		}
	}
	wantRoot := []string{"boot", "isolinux"}
	roots := map[string]bool{}
	markers := 0
	for p := range files {
		roots[strings.SplitN(p, "/", 2)[0]] = true
		if name := strings.TrimPrefix(p, "boot/"); name != p && strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".id") {
			markers++
		}
	}
	names := slices.Sorted(maps.Keys(roots))
	if !slices.Equal(names, wantRoot) {
		t.Errorf("the CD's root holds %v, want %v alone (no scratch file of the build)", names, wantRoot)
	}
	if markers != 1 {
		t.Errorf("%d marker files in /boot, want 1", markers)
	}
}

// readISO returns every file of an ISO by its Rock Ridge path, as
// Linux and GRUB read it.
func readISO(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := iso9660.Read(file.New(f, true), st.Size(), 0, 2048)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := fs.ReadDir(dir)
		if err != nil {
			t.Fatalf("read %s of the ISO: %v", dir, err)
		}
		for _, e := range ents {
			p := e.Name()
			if dir != "." {
				p = dir + "/" + p
			}
			if e.IsDir() {
				walk(p)
				continue
			}
			b, err := fs.ReadFile(p)
			if err != nil {
				t.Fatalf("read %s of the ISO: %v", p, err)
			}
			files[p] = b
		}
	}
	walk(".")
	return files
}

// GRUB takes every kernel argument literally; arguments it could not
// quote are refused rather than mangled.
func TestGrubConfigQuotesTheCommandLine(t *testing.T) {
	cfg, err := grubConfig("console=ttyS0,115200 baremetal.api=http://10.0.2.2:8080/x;y $z", "boot/agent-1.id")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"search --no-floppy --set=root --file /boot/agent-1.id\n",
		"linux /boot/vmlinuz 'console=ttyS0,115200' 'baremetal.api=http://10.0.2.2:8080/x;y' '$z'\n",
		"initrd /boot/initrd\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("grub.cfg has no %q:\n%s", want, cfg)
		}
	}
	if _, err := grubConfig("a='b'", "m"); err == nil {
		t.Error("a quote in the command line was accepted")
	}
}

// The kernel sends a process's output to the last console= of its
// command line (/dev/console): the agent's log reaches serial-over-LAN
// and the BMC's console log only when the serial port is last, on the
// BIOS path (isolinux) and the UEFI path (GRUB) alike. The kernel still
// prints to the screen, tty0, named first.
func TestDefaultCmdlinePutsTheSerialConsoleLast(t *testing.T) {
	lastConsole := func(args []string) string {
		last := ""
		for _, a := range args {
			if v, ok := strings.CutPrefix(strings.Trim(a, "'"), "console="); ok {
				last = v
			}
		}
		return last
	}
	line := func(t *testing.T, cfg, prefix string) []string {
		t.Helper()
		for _, l := range strings.Split(cfg, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), prefix); ok {
				return strings.Fields(rest)
			}
		}
		t.Fatalf("no %q line in:\n%s", prefix, cfg)
		return nil
	}
	const serial = "ttyS0,115200n8"
	if got := lastConsole(strings.Fields(DefaultCmdline)); got != serial {
		t.Errorf("DefaultCmdline %q: last console %q, want %q", DefaultCmdline, got, serial)
	}
	if !strings.Contains(DefaultCmdline, "console=tty0 ") {
		t.Errorf("DefaultCmdline %q: no console=tty0 for the screen", DefaultCmdline)
	}

	dir := t.TempDir()
	loader := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name+strings.Repeat("\x00", 2048)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kernel := fakeKernel(t, "6.1.0-99-amd64")
	initrd := filepath.Join(dir, "initrd")
	if err := os.WriteFile(initrd, []byte("BASE"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(t *testing.T, boot UEFIBoot) map[string][]byte {
		out := filepath.Join(t.TempDir(), "agent.iso")
		// No Cmdline: the default, as agent-image and the controller build it.
		if err := BuildISO(out, ISOOptions{Kernel: kernel, Initrd: initrd, UEFI: boot,
			IsolinuxBin: loader("isolinux.bin"), Ldlinux: loader("ldlinux.c32")}); err != nil {
			t.Fatal(err)
		}
		return readISO(t, out)
	}
	t.Run("bios", func(t *testing.T) {
		cfg := string(build(t, UEFIOff)["isolinux/isolinux.cfg"])
		if got := lastConsole(line(t, cfg, "APPEND ")); got != serial {
			t.Errorf("isolinux.cfg boots with last console %q, want %q:\n%s", got, serial, cfg)
		}
	})
	t.Run("uefi", func(t *testing.T) {
		cfg, err := grubConfig(DefaultCmdline, "boot/agent-1.id")
		if err != nil {
			t.Fatal(err)
		}
		if got := lastConsole(line(t, cfg, "linux /boot/vmlinuz ")); got != serial {
			t.Errorf("grub.cfg boots with last console %q, want %q:\n%s", got, serial, cfg)
		}
		// On the CD, where Debian's signed GRUB reads it.
		require(t, SecureBootAvailable("", ""))
		cd := string(build(t, UEFISecureBoot)["boot/grub/grub.cfg"])
		if got := lastConsole(line(t, cd, "linux /boot/vmlinuz ")); got != serial {
			t.Errorf("the CD's grub.cfg boots with last console %q, want %q:\n%s", got, serial, cd)
		}
	})
}
