package image

import (
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat12"
)

// Where GRUB's UEFI pieces live on a Debian host (package
// grub-efi-amd64-bin, which brings grub-common with grub-mkstandalone).
const (
	DefaultGrubDir          = "/usr/lib/grub/x86_64-efi"
	DefaultGrubMkstandalone = "grub-mkstandalone"
)

// Debian's signed boot chain for Secure Boot (packages shim-signed and
// grub-efi-amd64-signed): Microsoft's UEFI CA signs shim, which every
// Secure Boot machine trusts out of the box; shim carries Debian's key,
// which signs this GRUB (the build for CDs) and Debian's kernels.
const (
	DefaultShim       = "/usr/lib/shim/shimx64.efi.signed"
	DefaultSignedGrub = "/usr/lib/grub/x86_64-efi-signed/gcdx64.efi.signed"
)

// UEFIBoot is how an agent ISO boots on UEFI firmware.
type UEFIBoot string

const (
	// UEFIOff: no UEFI boot entry (BIOS only).
	UEFIOff UEFIBoot = ""
	// UEFIGrub: GRUB built by grub-mkstandalone, unsigned: the machine's
	// Secure Boot must be off.
	UEFIGrub UEFIBoot = "grub"
	// UEFISecureBoot: Debian's signed shim and GRUB, which boot with
	// Secure Boot on or off (the kernel must be signed too: Debian's are).
	UEFISecureBoot UEFIBoot = "secure-boot"
)

// ResolveUEFI turns an operator's choice into the UEFI boot an ISO gets:
// "auto" takes the signed chain where it is installed, else GRUB, else
// none; "on" wants either; "secure-boot" and "grub" want that one; "off"
// none. A choice that cannot be had is an error saying what to install.
func ResolveUEFI(choice, grubDir string) (UEFIBoot, error) {
	signed := SecureBootAvailable("", "")
	grub := UEFIAvailable("", grubDir)
	switch choice {
	case "auto", "on":
		switch {
		case signed == nil:
			return UEFISecureBoot, nil
		case grub == nil:
			return UEFIGrub, nil
		case choice == "on":
			return UEFIOff, fmt.Errorf("no UEFI boot loader: %v; %v", signed, grub)
		}
		return UEFIOff, nil
	case string(UEFISecureBoot):
		return UEFISecureBoot, signed
	case string(UEFIGrub):
		return UEFIGrub, grub
	case "off":
		return UEFIOff, nil
	}
	return UEFIOff, fmt.Errorf("UEFI boot %q: want auto, on, secure-boot, grub or off", choice)
}

// SecureBootAvailable reports whether Debian's signed shim and GRUB are
// at the paths given (defaults DefaultShim and DefaultSignedGrub).
func SecureBootAvailable(shim, grub string) error {
	for _, p := range []string{orString(shim, DefaultShim), orString(grub, DefaultSignedGrub)} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("the Secure Boot loader: %w (Debian: apt-get install --no-install-recommends shim-signed grub-efi-amd64-signed)", err)
		}
	}
	return nil
}

// efiImagePath is the EFI system partition image on the ISO, the file the
// El Torito EFI entry points at.
const efiImagePath = "boot/efi.img"

// grubModules are built into the UEFI loader: enough to find the agent's
// CD by a marker file and boot Linux from its ISO 9660 file system.
var grubModules = []string{"normal", "configfile", "echo", "test", "search", "search_fs_file", "iso9660", "fat", "linux", "boot"}

// UEFIAvailable reports whether GRUB's UEFI loader can be built here
// (grub-mkstandalone in PATH or at grubMk, and grubDir with its modules);
// the error says what is missing and how to get it.
func UEFIAvailable(grubMk, grubDir string) error {
	grubMk = orString(grubMk, DefaultGrubMkstandalone)
	grubDir = orString(grubDir, DefaultGrubDir)
	if _, err := exec.LookPath(grubMk); err != nil {
		return fmt.Errorf("UEFI boot loader: %w (Debian: apt-get install grub-efi-amd64-bin)", err)
	}
	if _, err := os.Stat(filepath.Join(grubDir, "linux.mod")); err != nil {
		return fmt.Errorf("UEFI boot loader: GRUB's x86_64-efi modules: %w (Debian: apt-get install grub-efi-amd64-bin)", err)
	}
	return nil
}

// grubConfig boots the kernel and initramfs from the CD that holds
// marker. The CD is found by that file rather than taken as GRUB's own
// device: UEFI firmware presents the El Torito EFI image as a device of
// its own, and a marker unique to this image keeps a disk that holds some
// other /boot/vmlinuz from being picked.
func grubConfig(cmdline, marker string) (string, error) {
	var args []string
	for _, a := range strings.Fields(cmdline) {
		if strings.ContainsAny(a, `'\`) {
			return "", fmt.Errorf("kernel command line argument %q: quotes and backslashes are not supported in the UEFI loader's config", a)
		}
		// Single quotes: GRUB takes the argument literally ($, ;, ... included).
		args = append(args, "'"+a+"'")
	}
	return "set timeout=0\n" +
		"echo 'baremetal agent: looking for its CD'\n" +
		"search --no-floppy --set=root --file /" + marker + "\n" +
		"echo 'baremetal agent: loading Linux'\n" +
		"linux /boot/vmlinuz " + strings.Join(args, " ") + "\n" +
		"initrd /boot/initrd\n" +
		"boot\n", nil
}

// efiFiles are the files of the EFI system partition for boot: the
// removable media loader /EFI/BOOT/BOOTX64.EFI and what it needs.
//
// With GRUB from grub-mkstandalone, BOOTX64.EFI is GRUB with its config
// built in. With the signed chain, BOOTX64.EFI is shim, which starts the
// signed grubx64.efi next to it (after checking Debian's signature); that
// GRUB's built-in config sources $prefix/grub.cfg, $prefix being
// /boot/grub of the device it was started from, and else $cmdpath's
// grub.cfg. On a CD GRUB takes that device for the whole CD, where
// BuildISO puts /boot/grub/grub.cfg (checked on OVMF); the copies here
// serve firmware that hands GRUB this image as its device.
func efiFiles(ws string, boot UEFIBoot, grubMk, grubDir, cmdline, marker string) (map[string][]byte, error) {
	cfg, err := grubConfig(cmdline, marker)
	if err != nil {
		return nil, err
	}
	if boot == UEFISecureBoot {
		if err := SecureBootAvailable("", ""); err != nil {
			return nil, err
		}
		shim, err := os.ReadFile(DefaultShim)
		if err != nil {
			return nil, err
		}
		grub, err := os.ReadFile(DefaultSignedGrub)
		if err != nil {
			return nil, err
		}
		return map[string][]byte{"/EFI/BOOT/BOOTX64.EFI": shim, "/EFI/BOOT/grubx64.efi": grub,
			"/boot/grub/grub.cfg": []byte(cfg), "/EFI/BOOT/grub.cfg": []byte(cfg)}, nil
	}
	grubMk = orString(grubMk, DefaultGrubMkstandalone)
	grubDir = orString(grubDir, DefaultGrubDir)
	if err := UEFIAvailable(grubMk, grubDir); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(ws, "grub.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	loader := filepath.Join(ws, "BOOTX64.EFI")
	cmd := exec.Command(grubMk, "--format=x86_64-efi", "--directory="+grubDir, "--output="+loader,
		"--locales=", "--fonts=", "--themes=",
		"--modules="+strings.Join(grubModules, " "),
		"--install-modules="+strings.Join(grubModules, " "),
		"boot/grub/grub.cfg="+cfgPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("grub-mkstandalone: %w: %s", err, strings.TrimSpace(string(out)))
	}
	efi, err := os.ReadFile(loader)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"/EFI/BOOT/BOOTX64.EFI": efi}, nil
}

// buildEFIImage makes the FAT image of the EFI system partition that
// boots the agent on UEFI firmware (efiFiles) and returns its bytes.
func buildEFIImage(boot UEFIBoot, grubMk, grubDir, cmdline, marker string) ([]byte, error) {
	// Not in the ISO's tree: the scratch files must not end up on the CD.
	ws, err := os.MkdirTemp("", "agent-efi-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(ws) }() // a temporary dir; nothing to do if it stays
	files, err := efiFiles(ws, boot, grubMk, grubDir, cmdline, marker)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, b := range files {
		total += int64(len(b))
	}
	// FAT12: UEFI firmware tells the FAT type by the cluster count, and an
	// image of a few MiB has too few clusters for FAT16 or FAT32.
	size := (total + 512<<10 + 1<<20 - 1) &^ (1<<20 - 1)
	size = max(size, 2<<20)
	// A 16 MiB FAT12 image already has more clusters than FAT12 allows.
	if size >= 16<<20 {
		return nil, fmt.Errorf("the UEFI loader is %d bytes: too large for its FAT image", total)
	}
	imgPath := filepath.Join(ws, "efi.img")
	img, err := os.OpenFile(imgPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	if err := img.Truncate(size); err != nil {
		return nil, err
	}
	fs, err := fat12.Create(file.New(img, false), size, 0, 512, "AGENT_EFI", true)
	if err != nil {
		return nil, fmt.Errorf("EFI system partition: %w", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	made := map[string]bool{}
	for _, name := range names {
		// Parents first, each once.
		var dirs []string
		for d := path.Dir(name); d != "/" && !made[d]; d = path.Dir(d) {
			dirs = append([]string{d}, dirs...)
			made[d] = true
		}
		for _, d := range dirs {
			if err := fs.Mkdir(d); err != nil {
				return nil, fmt.Errorf("EFI system partition: %w", err)
			}
		}
		f, err := fs.OpenFile(name, os.O_CREATE|os.O_RDWR)
		if err != nil {
			return nil, fmt.Errorf("EFI system partition: %w", err)
		}
		if _, err := f.Write(files[name]); err != nil {
			return nil, fmt.Errorf("EFI system partition: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("EFI system partition: %w", err)
		}
	}
	if err := img.Close(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(imgPath)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, errors.New("EFI system partition: empty image")
	}
	return b, nil
}

// KernelSigned reports whether a kernel carries an Authenticode signature
// (a PE image whose certificate table is not empty), as Debian's signed
// kernels do. shim checks it on a Secure Boot machine, so an ISO built
// for Secure Boot around an unsigned kernel starts GRUB and then fails:
// callers warn at build time rather than have the operator find out at a
// node's console. It does not check who signed it.
func KernelSigned(path string) (bool, error) {
	raw, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("kernel: %w", err)
	}
	defer raw.Close()
	// debug/pe reads a file without the MZ stub as a bare COFF object, so
	// the DOS and PE signatures are checked here.
	var hdr [64]byte
	var sig [4]byte
	if _, err := raw.ReadAt(hdr[:], 0); err != nil || string(hdr[:2]) != "MZ" {
		return false, fmt.Errorf("kernel %s is not an EFI (PE) image: no MZ header", path)
	}
	if _, err := raw.ReadAt(sig[:], int64(binary.LittleEndian.Uint32(hdr[0x3c:]))); err != nil || string(sig[:]) != "PE\x00\x00" {
		return false, fmt.Errorf("kernel %s is not an EFI (PE) image: no PE signature", path)
	}
	f, err := pe.NewFile(raw)
	if err != nil {
		return false, fmt.Errorf("kernel %s is not an EFI (PE) image: %w", path, err)
	}
	// f has nothing of its own to close: raw is closed above.
	var dirs []pe.DataDirectory
	switch oh := f.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		dirs = oh.DataDirectory[:min(int(oh.NumberOfRvaAndSizes), len(oh.DataDirectory))]
	case *pe.OptionalHeader32:
		dirs = oh.DataDirectory[:min(int(oh.NumberOfRvaAndSizes), len(oh.DataDirectory))]
	}
	if len(dirs) <= pe.IMAGE_DIRECTORY_ENTRY_SECURITY {
		return false, nil
	}
	return dirs[pe.IMAGE_DIRECTORY_ENTRY_SECURITY].Size > 0, nil
}

// SecureBootKernelWarning is what to tell an operator who builds a Secure
// Boot ISO around kernel, or "" when the kernel is signed.
func SecureBootKernelWarning(kernel string) string {
	signed, err := KernelSigned(kernel)
	switch {
	case err != nil:
		return err.Error() + ": Secure Boot machines will not start it"
	case !signed:
		return "kernel " + kernel + " is not signed: Secure Boot machines will not start it (use Debian's linux-image-amd64, or enroll your key with MOK)"
	}
	return ""
}
