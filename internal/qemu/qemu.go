// Package qemu runs a qemu process and talks to it over QMP (the QEMU
// Machine Protocol): commands with arguments, asynchronous events, and the
// reason the machine stopped. It is the one place that knows QMP, shared by
// the test rig (internal/testvm) and the VM-backed systems of the
// simulated BMC fleet (internal/bmc/sim).
//
// Start returns as soon as the process runs; the QMP connection is made in
// the background (qemu creates its socket a moment later), and commands
// wait for it. That keeps "the process started" and "the machine is up"
// apart, as a BMC's power-on is.
package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Binary is the emulator used when Config.Binary is empty.
const Binary = "qemu-system-x86_64"

// connectTimeout bounds how long qemu may take to open its QMP socket.
const connectTimeout = 30 * time.Second

// maxEvents is how many QMP events a process keeps (a long-running guest
// emits a few per boot; the oldest are dropped).
const maxEvents = 256

// Config describes one qemu process.
type Config struct {
	// Binary defaults to Binary.
	Binary string
	// Args are the machine's arguments; Start adds -qmp.
	Args []string
	// Output receives qemu's own stdout and stderr (nil: discarded).
	Output io.Writer
}

// Event is an asynchronous QMP event.
type Event struct {
	Name string          `json:"event"`
	Data json.RawMessage `json:"data"`
}

// Process is a running (or exited) qemu.
type Process struct {
	// Started is when the process was started.
	Started time.Time

	sockDir string
	cmd     *exec.Cmd
	// procDone closes when the process has ended; exited once, in
	// addition, every QMP message it sent has been read (its last words,
	// the SHUTDOWN event, come just before the end).
	procDone   chan struct{}
	readerDone chan struct{}
	exited     chan struct{}
	waitErr    error

	ready    chan struct{} // closed when QMP is negotiated or failed
	readyErr error
	conn     net.Conn

	killed atomic.Bool

	cmdMu  sync.Mutex // one QMP command at a time
	nextID uint64

	mu       sync.Mutex
	events   []Event
	evch     chan struct{} // signalled on every event
	reply    chan qmpReply
	shutdown string // reason of the last SHUTDOWN event
}

type qmpReply struct {
	ID     uint64          `json:"id"`
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
}

// Start starts qemu. It returns once the process runs; QMP connects in the
// background (Ready).
func Start(cfg Config) (*Process, error) {
	bin := cfg.Binary
	if bin == "" {
		bin = Binary
	}
	// A short directory of its own: a unix socket path must fit in 108
	// bytes, and test temp dirs are long.
	sockDir, err := os.MkdirTemp("", "qmp-")
	if err != nil {
		return nil, fmt.Errorf("qemu: QMP socket directory: %w", err)
	}
	sock := filepath.Join(sockDir, "qmp.sock")
	args := append(append([]string(nil), cfg.Args...), "-qmp", "unix:"+sock+",server=on,wait=off")
	cmd := exec.Command(bin, args...)
	out := cfg.Output
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	setDeathSignal(cmd)
	p := &Process{
		sockDir:    sockDir,
		cmd:        cmd,
		exited:     make(chan struct{}),
		procDone:   make(chan struct{}),
		readerDone: make(chan struct{}),
		ready:      make(chan struct{}),
		evch:       make(chan struct{}, 1),
		reply:      make(chan qmpReply, 1),
	}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(sockDir)
		return nil, fmt.Errorf("qemu: start %s: %w", bin, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		_ = os.RemoveAll(sockDir)
		close(p.procDone)
		<-p.ready
		if p.readyErr == nil {
			<-p.readerDone // EOF comes once the process is gone
		}
		close(p.exited)
	}()
	go p.connect(sock)
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr is how the process ended (after Exited is closed): nil for a
// clean exit.
func (p *Process) ExitErr() error {
	<-p.exited
	return p.waitErr
}

// Ready is closed when the QMP connection is up (or could not be made:
// then ReadyErr says why).
func (p *Process) Ready() <-chan struct{} { return p.ready }

// ReadyErr is why QMP could not be connected; nil once it is (or while
// it is still connecting).
func (p *Process) ReadyErr() error {
	select {
	case <-p.ready:
		return p.readyErr
	default:
		return nil
	}
}

// WaitReady waits for the QMP connection.
func (p *Process) WaitReady(ctx context.Context) error {
	select {
	case <-p.ready:
		return p.readyErr
	case <-ctx.Done():
		return fmt.Errorf("qemu: waiting for QMP: %w", ctx.Err())
	}
}

func (p *Process) connect(path string) {
	err := p.dial(path)
	if err != nil {
		p.readyErr = fmt.Errorf("qemu QMP: %w", err)
		if p.conn != nil {
			p.conn.Close()
		}
		// Without QMP nothing controls this qemu: end it rather than
		// leave a machine no one can stop.
		_ = p.cmd.Process.Kill()
	}
	close(p.ready)
}

func (p *Process) dial(path string) error {
	var c net.Conn
	var err error
	deadline := time.Now().Add(connectTimeout)
	for {
		if c, err = net.Dial("unix", path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no QMP socket after %s: %w", connectTimeout, err)
		}
		select {
		case <-p.procDone:
			return fmt.Errorf("qemu exited: %v", p.waitErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.conn = c
	// Greeting and capabilities negotiation happen before the reader runs,
	// each bounded, so a wedged qemu cannot hold Ready forever.
	_ = c.SetDeadline(time.Now().Add(connectTimeout))
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	if !sc.Scan() {
		return fmt.Errorf("no QMP greeting: %v", sc.Err())
	}
	if _, err := io.WriteString(c, `{"execute":"qmp_capabilities"}`+"\n"); err != nil {
		return err
	}
	for sc.Scan() {
		var m qmpReply
		var ev Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Name != "" {
			p.addEvent(ev)
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("QMP capabilities answer %q: %w", sc.Bytes(), err)
		}
		if m.Error != nil {
			return fmt.Errorf("QMP capabilities: %s: %s", m.Error.Class, m.Error.Desc)
		}
		_ = c.SetDeadline(time.Time{})
		go p.read(sc)
		return nil
	}
	return fmt.Errorf("QMP closed during negotiation: %v", sc.Err())
}

func (p *Process) read(sc *bufio.Scanner) {
	defer close(p.readerDone)
	defer p.conn.Close()
	for sc.Scan() {
		var ev Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Name != "" {
			p.addEvent(ev)
			continue
		}
		var m qmpReply
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		// A reply to a command that gave up waiting is dropped here, not
		// handed to the next command (replies carry the command's id).
		select {
		case p.reply <- m:
		default:
		}
	}
}

func (p *Process) addEvent(ev Event) {
	p.mu.Lock()
	if len(p.events) == maxEvents {
		p.events = append(p.events[:0], p.events[1:]...)
	}
	p.events = append(p.events, ev)
	if ev.Name == "SHUTDOWN" {
		var d struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(ev.Data, &d) == nil {
			p.shutdown = d.Reason
		}
	}
	p.mu.Unlock()
	select {
	case p.evch <- struct{}{}:
	default:
	}
}

// ShutdownReason is the reason of the last SHUTDOWN event ("" before
// any): "guest-shutdown" (the guest powered off), "guest-reset" (it
// rebooted, with -no-reboot), "host-qmp-quit", "host-qmp-system-reset",
// "guest-panic", "host-signal", ...
func (p *Process) ShutdownReason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shutdown
}

// Events returns the events received so far (the last maxEvents).
func (p *Process) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Command runs a QMP command with arguments (nil for none) and returns
// its "return" value.
func (p *Process) Command(ctx context.Context, name string, args any) (json.RawMessage, error) {
	if err := p.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("QMP %s: %w", name, err)
	}
	p.cmdMu.Lock()
	defer p.cmdMu.Unlock()
	p.nextID++
	id := p.nextID
	req := map[string]any{"execute": name, "id": id}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("QMP %s: %w", name, err)
	}
	if _, err := p.conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("QMP %s: %w", name, err)
	}
	for {
		select {
		case m := <-p.reply:
			if m.ID != id {
				continue // the late answer of an abandoned command
			}
			if m.Error != nil {
				return nil, fmt.Errorf("QMP %s: %s: %s", name, m.Error.Class, m.Error.Desc)
			}
			return m.Return, nil
		case <-p.exited:
			return nil, fmt.Errorf("QMP %s: %w", name, ErrExited)
		case <-ctx.Done():
			return nil, fmt.Errorf("QMP %s: %w", name, ctx.Err())
		}
	}
}

// ErrExited: the qemu process ended.
var ErrExited = errors.New("qemu exited")

// Status is QMP query-status's "status": running, paused, shutdown,
// prelaunch, guest-panicked, ...
func (p *Process) Status(ctx context.Context) (string, error) {
	raw, err := p.Command(ctx, "query-status", nil)
	if err != nil {
		return "", err
	}
	var s struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("QMP query-status %s: %w", raw, err)
	}
	return s.Status, nil
}

// WaitEvent waits for the first event with this name.
func (p *Process) WaitEvent(ctx context.Context, name string) (Event, error) {
	for {
		p.mu.Lock()
		for _, e := range p.events {
			if e.Name == name {
				p.mu.Unlock()
				return e, nil
			}
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return Event{}, fmt.Errorf("waiting for QMP event %s: %w", name, ctx.Err())
		case <-p.exited:
			// The event may have come just before the exit.
			p.mu.Lock()
			for _, e := range p.events {
				if e.Name == name {
					p.mu.Unlock()
					return e, nil
				}
			}
			p.mu.Unlock()
			return Event{}, fmt.Errorf("%w before QMP event %s", ErrExited, name)
		case <-p.evch:
		}
	}
}

// Quit asks qemu to quit over QMP and waits for the process to end; if
// QMP does not answer or the process outlives ctx, it is killed.
func (p *Process) Quit(ctx context.Context) error {
	_, err := p.Command(ctx, "quit", nil)
	if err != nil && !errors.Is(err, ErrExited) {
		p.Kill()
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		p.Kill()
		return fmt.Errorf("qemu did not quit: %w", ctx.Err())
	}
}

// Kill ends the process at once and waits for it.
func (p *Process) Kill() {
	p.killed.Store(true)
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Killed reports whether Kill was called (the process may have ended
// by itself before).
func (p *Process) Killed() bool { return p.killed.Load() }

// IsReset reports whether a SHUTDOWN reason is a reset (the machine would
// have rebooted, had -no-reboot not turned the reset into an exit).
func IsReset(reason string) bool {
	return strings.HasSuffix(reason, "-reset")
}

// ovmfPairs are Debian's UEFI firmware images (package ovmf): the code and
// the template of its variable store, which must match in size.
var ovmfPairs = [][2]string{
	{"/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd"},
	{"/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd"},
}

// ovmfSecureBootPairs are Debian's OVMF built for Secure Boot (SMM: the
// machine must be q35 with smm=on, see SecureBootArgs) with a variable
// store that has Microsoft's keys enrolled and Secure Boot on, as a
// server's firmware ships.
var ovmfSecureBootPairs = [][2]string{
	{"/usr/share/OVMF/OVMF_CODE_4M.secboot.fd", "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"},
	{"/usr/share/OVMF/OVMF_CODE.secboot.fd", "/usr/share/OVMF/OVMF_VARS.ms.fd"},
}

// FindOVMFSecureBoot is FindOVMF for firmware that enforces Secure Boot.
func FindOVMFSecureBoot() (code, vars string, ok bool) {
	return findPair(ovmfSecureBootPairs)
}

// SecureBootArgs are the machine arguments Secure Boot OVMF needs: its
// variable store is writable only from System Management Mode.
func SecureBootArgs() []string {
	return []string{"-machine", "q35,smm=on", "-global", "driver=cfi.pflash01,property=secure,value=on"}
}

// FindOVMF returns the installed OVMF firmware and variable store
// template; ok is false when there is none (Debian: apt-get install ovmf).
func FindOVMF() (code, vars string, ok bool) {
	return findPair(ovmfPairs)
}

func findPair(pairs [][2]string) (code, vars string, ok bool) {
	for _, p := range pairs {
		if _, err := os.Stat(p[0]); err != nil {
			continue
		}
		if _, err := os.Stat(p[1]); err != nil {
			continue
		}
		return p[0], p[1], true
	}
	return "", "", false
}

// UEFIArgs are the qemu arguments that boot OVMF with a private copy of
// its variable store in dir (made on first use, kept after: the firmware
// remembers its boot entries there).
func UEFIArgs(code, varsTemplate, dir string) ([]string, error) {
	vars := filepath.Join(dir, "OVMF_VARS.fd")
	if _, err := os.Stat(vars); errors.Is(err, os.ErrNotExist) {
		b, err := os.ReadFile(varsTemplate)
		if err != nil {
			return nil, fmt.Errorf("UEFI variable store: %w", err)
		}
		if err := os.WriteFile(vars, b, 0o644); err != nil {
			return nil, fmt.Errorf("UEFI variable store: %w", err)
		}
	}
	return []string{
		"-drive", "if=pflash,format=raw,unit=0,readonly=on,file=" + code,
		"-drive", "if=pflash,format=raw,unit=1,file=" + vars,
	}, nil
}
