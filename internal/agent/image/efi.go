package image

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// buildEFIImage writes, in ws, a FAT image holding GRUB as the removable
// media loader /EFI/BOOT/BOOTX64.EFI (its config built in), and returns
// the image's bytes.
func buildEFIImage(ws, grubMk, grubDir, cmdline, marker string) ([]byte, error) {
	grubMk = orString(grubMk, DefaultGrubMkstandalone)
	grubDir = orString(grubDir, DefaultGrubDir)
	if err := UEFIAvailable(grubMk, grubDir); err != nil {
		return nil, err
	}
	cfg, err := grubConfig(cmdline, marker)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(ws, "efi-")
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "grub.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	loader := filepath.Join(dir, "BOOTX64.EFI")
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
	// FAT12: UEFI firmware tells the FAT type by the cluster count, and an
	// image of a few MiB has too few clusters for FAT16 or FAT32.
	size := (int64(len(efi)) + 512<<10 + 1<<20 - 1) &^ (1<<20 - 1)
	size = max(size, 2<<20)
	if size > 16<<20 {
		return nil, fmt.Errorf("the UEFI loader is %d bytes: too large for its FAT image", len(efi))
	}
	imgPath := filepath.Join(dir, "efi.img")
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
	for _, d := range []string{"/EFI", "/EFI/BOOT"} {
		if err := fs.Mkdir(d); err != nil {
			return nil, fmt.Errorf("EFI system partition: %w", err)
		}
	}
	f, err := fs.OpenFile("/EFI/BOOT/BOOTX64.EFI", os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("EFI system partition: %w", err)
	}
	if _, err := f.Write(efi); err != nil {
		return nil, fmt.Errorf("EFI system partition: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("EFI system partition: %w", err)
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
