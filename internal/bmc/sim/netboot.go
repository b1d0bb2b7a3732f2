package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// A simulated machine's network boot plays its NIC's iPXE with the
// provisioning network's DHCP handing it the fleet's netboot URL
// (MachineOptions.NetbootURL, Fleet.SetNetbootURL): it runs the script's
// chain, kernel, initrd, boot, echo and exit commands, with ${uuid} and
// ${mac} (the first NIC's) expanded, as the controller's agent netboot
// script uses them. Nothing else of iPXE's language is understood.

const (
	maxIPXEScript = 64 << 10
	maxChains     = 8
	maxNetKernel  = 256 << 20
	maxNetInitrd  = 1 << 30
)

// ipxeExit is a script that exited: the firmware boots the next device.
type ipxeExit struct{ said string }

func (e *ipxeExit) Error() string {
	if e.said == "" {
		return "the network boot script exited"
	}
	return "the network boot script exited: " + e.said
}

// bootFromNetwork runs the netboot script and boots what it loads.
func (m *machine) bootFromNetwork(b *machineBoot, log *slog.Logger) (next bool, why string) {
	start := m.f.netbootURL()
	if start == "" {
		return true, "no network boot server answers (no netboot URL: MachineOptions.NetbootURL)"
	}
	lb, err := m.ipxe(b.ctx, start, log)
	if b.ctx.Err() != nil {
		return false, ""
	}
	if err != nil {
		return true, err.Error()
	}
	if !lb.isAgent() {
		log.Info("booting the network's OS", "loader", lb.loader)
		m.startOS(b, bootNetwork, nil, "", log)
		return false, ""
	}
	log.Info("booting Linux from the network", "loader", lb.loader)
	m.runAgent(b, bootNetwork, lb, log)
	return false, ""
}

// ipxe runs the script at script and returns the Linux boot it loads.
func (m *machine) ipxe(ctx context.Context, script string, log *slog.Logger) (*linuxBoot, error) {
	vars := strings.NewReplacer("${uuid}", m.s.uuid, "${mac}", m.nics[0].MAC, "${net0/mac}", m.nics[0].MAC)
	for range maxChains {
		base, err := url.Parse(script)
		if err != nil {
			return nil, fmt.Errorf("network boot: bad URL %q", script)
		}
		body, err := m.f.fetchBytes(ctx, script, maxIPXEScript)
		if err != nil {
			return nil, fmt.Errorf("network boot: fetching %s: %w", showURL(base), err)
		}
		if !bytes.HasPrefix(body, []byte("#!ipxe")) {
			return nil, fmt.Errorf("network boot: %s is not an iPXE script", showURL(base))
		}
		resolve := func(ref string) (string, error) {
			u, err := base.Parse(vars.Replace(ref))
			if err != nil {
				return "", fmt.Errorf("network boot: bad URL %q in the script", ref)
			}
			return u.String(), nil
		}
		var kernel, cmdline, said string
		var initrds []string
		chained := false
	lines:
		for _, line := range strings.Split(string(body), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || strings.HasPrefix(f[0], "#") {
				continue
			}
			args := f[1:]
			for len(args) > 0 && strings.HasPrefix(args[0], "--") {
				args = args[1:] // options such as --autofree
			}
			switch f[0] {
			case "echo":
				said = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "echo"))
				log.Info("iPXE", "echo", said)
			case "exit":
				return nil, &ipxeExit{said}
			case "chain":
				if len(args) == 0 {
					return nil, errors.New("network boot: chain without a URL")
				}
				if script, err = resolve(args[0]); err != nil {
					return nil, err
				}
				chained = true
				break lines
			case "kernel":
				if len(args) == 0 {
					return nil, errors.New("network boot: kernel without a URL")
				}
				if kernel, err = resolve(args[0]); err != nil {
					return nil, err
				}
				var kargs []string
				for _, a := range args[1:] {
					if !strings.HasPrefix(a, "initrd=") { // iPXE's, naming the initrd
						kargs = append(kargs, a)
					}
				}
				cmdline = strings.Join(kargs, " ")
			case "initrd":
				if len(args) == 0 {
					return nil, errors.New("network boot: initrd without a URL")
				}
				u, err := resolve(args[0])
				if err != nil {
					return nil, err
				}
				initrds = append(initrds, u)
			case "boot":
				if kernel == "" {
					return nil, errors.New("network boot: boot without a kernel")
				}
				return m.loadNetLinux(ctx, kernel, cmdline, initrds)
			}
		}
		if !chained {
			return nil, errors.New("network boot: the script ended without booting")
		}
	}
	return nil, fmt.Errorf("network boot: more than %d chained scripts", maxChains)
}

// loadNetLinux fetches the kernel and initramfs an iPXE script named.
func (m *machine) loadNetLinux(ctx context.Context, kernel, cmdline string, initrds []string) (*linuxBoot, error) {
	k, err := m.f.fetchBytes(ctx, kernel, maxNetKernel)
	if err != nil {
		return nil, fmt.Errorf("network boot: fetching the kernel: %w", err)
	}
	if err := checkBzImage(k); err != nil {
		return nil, fmt.Errorf("network boot: %w", err)
	}
	lb := &linuxBoot{loader: "iPXE", cmdline: cmdline}
	// iPXE hands the kernel its initrds one after the other, as one.
	for _, u := range initrds {
		b, err := m.f.fetchBytes(ctx, u, maxNetInitrd)
		if err != nil {
			return nil, fmt.Errorf("network boot: fetching the initrd: %w", err)
		}
		if err := lb.unpack(b); err != nil {
			return nil, fmt.Errorf("network boot: %w", err)
		}
	}
	return lb, nil
}

// fetchBytes GETs a boot file whole, at most limit bytes.
func (f *Fleet) fetchBytes(ctx context.Context, rawURL string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, vmFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.mediaClient.Do(req)
	if err != nil {
		return nil, cleanFetchError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("it answered HTTP %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, cleanFetchError(err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d MiB", limit>>20)
	}
	return b, nil
}
