// Package kmod reads a kernel's modules.dep and loads modules in dependency
// order. The agent image builder uses it to pick the modules it ships (a
// module and everything it needs); the agent uses it at boot to load them.
//
// Debian's kernel builds disk, NIC and CD drivers as modules, so the
// agent's initramfs must carry them: without virtio_blk there is no disk to
// deploy to, without virtio_net or e1000e no network to reach the
// controller.
package kmod

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
)

// Name is a module's canonical name: the file's base name without ".ko"
// and compression suffix, with '-' folded to '_' (the kernel treats them
// alike: usb-storage.ko is module usb_storage).
func Name(file string) string {
	base := path.Base(file)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

// Deps is a parsed modules.dep: each module file (relative to the modules
// directory, e.g. "kernel/drivers/block/virtio_blk.ko") and the files it
// needs, in the order depmod wrote them (the last one must load first).
type Deps struct {
	files  map[string][]string // file -> dependency files
	byName map[string]string   // canonical name -> file
	listed []string            // files in the order of the file
}

// ParseDeps reads modules.dep.
func ParseDeps(r io.Reader) (*Deps, error) {
	d := &Deps{files: map[string][]string{}, byName: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, rest, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("modules.dep line %d: no ':' in %q", n, line)
		}
		file = strings.TrimSpace(file)
		if _, dup := d.files[file]; !dup {
			d.listed = append(d.listed, file)
		}
		d.files[file] = strings.Fields(rest)
		d.byName[Name(file)] = file
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read modules.dep: %w", err)
	}
	return d, nil
}

// File returns the file of the module with this name.
func (d *Deps) File(name string) (string, bool) {
	f, ok := d.byName[Name(name)]
	return f, ok
}

// Files returns every module file in the order modules.dep lists them.
// Order keeps that order where dependencies allow, so the file Write
// produced loads in the order the image builder chose: modules that
// modules.dep cannot express as a dependency (libcrc32c needs a crc32c
// crypto module, a "softdep") come first because they were asked for
// first.
func (d *Deps) Files() []string {
	return append([]string(nil), d.listed...)
}

// Order returns the given module files and everything they depend on,
// each once, dependencies before the modules that need them. A dependency
// missing from modules.dep is an error: loading would fail at boot with an
// "Unknown symbol" the operator cannot act on.
func (d *Deps) Order(files []string) ([]string, error) {
	var out []string
	state := map[string]int{} // 0 unseen, 1 in progress, 2 done
	var visit func(f string, from string) error
	visit = func(f, from string) error {
		switch state[f] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("modules.dep: dependency cycle through %s", f)
		}
		deps, ok := d.files[f]
		if !ok {
			if from != "" {
				return fmt.Errorf("modules.dep: %s needs %s, which is not listed", from, f)
			}
			return fmt.Errorf("modules.dep: %s is not listed", f)
		}
		state[f] = 1
		// depmod lists dependencies so that the last must load first;
		// walking them in reverse keeps that order in the output.
		for i := len(deps) - 1; i >= 0; i-- {
			if err := visit(deps[i], f); err != nil {
				return err
			}
		}
		state[f] = 2
		out = append(out, f)
		return nil
	}
	for _, f := range files {
		if err := visit(f, ""); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Write writes the subset of modules.dep for files (which must be closed
// under dependencies, as Order returns) in depmod's format.
func (d *Deps) Write(w io.Writer, files []string) error {
	bw := bufio.NewWriter(w)
	for _, f := range files {
		fmt.Fprintf(bw, "%s:", f)
		for _, dep := range d.files[f] {
			fmt.Fprintf(bw, " %s", dep)
		}
		_ = bw.WriteByte('\n') // a bufio.Writer keeps its first error for Flush
	}
	return bw.Flush()
}
