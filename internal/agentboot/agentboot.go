// Package agentboot makes the deploy agent's boot media that the
// controller serves: the agent ISO for a node's BMC (kernel, the base
// initramfs with the controller's own static binary as /init, and a
// per-boot config archive appended to it, so the per-boot token is in the
// image and never on a kernel command line or a console), and the same
// kernel and per-boot initramfs for nodes that boot the agent from the
// network (iPXE).
package agentboot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/image"
)

// Options say what the agent image is made of.
type Options struct {
	// Kernel is a Linux bzImage (Debian: /boot/vmlinuz-* of
	// linux-image-amd64).
	Kernel string
	// ModulesDir is its /lib/modules/<version> (default: from the kernel).
	ModulesDir string
	// Agent is the static controller binary to run as /init (default:
	// this process's executable, which must be built with CGO_ENABLED=0).
	Agent string
	// Dir keeps the base initramfs (default: a temporary directory).
	Dir string
	// UEFI is how the ISO boots on UEFI firmware besides BIOS (see
	// image.ResolveUEFI): a node whose firmware boots UEFI only, as
	// many current servers do, cannot start a BIOS-only agent CD.
	UEFI image.UEFIBoot
	// CABundle is the agent's trust store (image.ResolveCABundle; empty:
	// none).
	CABundle string
}

// Builder makes per-boot agent ISOs over one base initramfs.
type Builder struct {
	kernel string
	initrd string
	uefi   image.UEFIBoot

	mu     sync.Mutex
	cache  map[string][]byte // by kind and per-boot token: a BMC fetches one ISO many times (HEAD, ranges)
	order  []string
	kbytes []byte // the kernel, read once
}

// cacheSize bounds the ISOs kept in memory (each is the kernel plus the
// initramfs, some tens of MiB): enough for the nodes that boot at once in
// a small rack; others are rebuilt on demand.
const cacheSize = 4

// New builds the base initramfs once; the ISOs are made per boot.
func New(o Options) (*Builder, error) {
	if o.Kernel == "" {
		return nil, errors.New("agent image: no kernel (--agent-kernel)")
	}
	bin := o.Agent
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("agent image: find this binary: %w", err)
		}
		bin = exe
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "baremetal-agent-")
		if err != nil {
			return nil, fmt.Errorf("agent image: %w", err)
		}
		dir = d
	}
	var initrd bytes.Buffer
	if _, err := image.BuildInitrd(&initrd, image.InitrdOptions{Agent: bin, Kernel: o.Kernel, ModulesDir: o.ModulesDir, CABundle: o.CABundle}); err != nil {
		return nil, fmt.Errorf("agent image: %w", err)
	}
	path := filepath.Join(dir, "agent-initrd")
	if err := os.WriteFile(path, initrd.Bytes(), 0o600); err != nil {
		return nil, fmt.Errorf("agent image: %w", err)
	}
	return &Builder{kernel: o.Kernel, initrd: path, uefi: o.UEFI, cache: map[string][]byte{}}, nil
}

// ISO returns the bootable agent ISO for one boot with cfg (the
// controller's URL as the node reaches it, and the per-boot token).
func (b *Builder) ISO(ctx context.Context, cfg agent.Config) ([]byte, error) {
	return b.perBoot(ctx, "iso", cfg, func(appendix []byte) ([]byte, error) {
		tmp, err := os.MkdirTemp("", "baremetal-agent-iso-")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(tmp) }() // a temporary dir; nothing to do if it stays
		out := filepath.Join(tmp, "agent.iso")
		if err := image.BuildISO(out, image.ISOOptions{Kernel: b.kernel, Initrd: b.initrd, InitrdAppend: appendix, UEFI: b.uefi}); err != nil {
			return nil, fmt.Errorf("agent ISO: %w", err)
		}
		return os.ReadFile(out)
	})
}

// Initrd returns the agent's initramfs for one network boot with cfg:
// the base one with the boot's config archive appended (the kernel
// unpacks concatenated archives in turn), as the ISO carries it.
func (b *Builder) Initrd(ctx context.Context, cfg agent.Config) ([]byte, error) {
	return b.perBoot(ctx, "initrd", cfg, func(appendix []byte) ([]byte, error) {
		base, err := os.ReadFile(b.initrd)
		if err != nil {
			return nil, fmt.Errorf("agent initramfs: %w", err)
		}
		return append(base, appendix...), nil
	})
}

// Kernel returns the agent's kernel, the same for every boot.
func (b *Builder) Kernel() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kbytes == nil {
		k, err := os.ReadFile(b.kernel)
		if err != nil {
			return nil, fmt.Errorf("agent kernel: %w", err)
		}
		b.kbytes = k
	}
	return b.kbytes, nil
}

// Cmdline is the agent kernel's command line on a network boot: the
// ISO's. It holds no secret (the token is in the initramfs).
func (b *Builder) Cmdline() string { return image.DefaultCmdline }

// perBoot returns the cached kind of image of cfg's boot, or makes it
// with build from the boot's config archive.
func (b *Builder) perBoot(ctx context.Context, kind string, cfg agent.Config, build func(appendix []byte) ([]byte, error)) ([]byte, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	key := kind + "/" + cfg.Token
	b.mu.Lock()
	img, ok := b.cache[key]
	b.mu.Unlock()
	if ok {
		return img, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conf, err := agent.MarshalConfigFile(cfg)
	if err != nil {
		return nil, err
	}
	appendix, err := image.ConfigArchive(map[string][]byte{agent.ConfigPath: conf})
	if err != nil {
		return nil, err
	}
	if img, err = build(appendix); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.cache[key]; !ok {
		b.cache[key] = img
		b.order = append(b.order, key)
		if len(b.order) > cacheSize {
			delete(b.cache, b.order[0])
			b.order = b.order[1:]
		}
	}
	return img, nil
}
