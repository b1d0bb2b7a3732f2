// Package ipmisim runs OpenIPMI's ipmi_sim as a real IPMI 2.0 BMC for
// tests: one simulated BMC on a loopback UDP port, whose chassis power and
// boot device live in files the test can read.
//
// ipmi_sim ships no usable configuration, so Start writes three files into
// a temporary directory:
//
//   - lan.conf (ipmi_lan(5)): one LAN channel on 127.0.0.1:PORT, one
//     admin user, a GUID (RMCP+ needs one), and a chassis_control program;
//   - cmds (ipmi_sim_cmd(5)): a BMC at IPMB address 0x20, enabled, with
//     a System Event Log and three sensors in its SDR repository (see
//     Sensor);
//   - chassis: the chassis_control program. ipmi_sim runs it as
//     "chassis 0x20 get power" (expects "power:0|1") and
//     "chassis 0x20 set power 1|0", "set reset 1", "set shutdown 1",
//     "set boot none|pxe|default|cdrom|bios". Without one, Chassis Control
//     fails and Get Chassis Status always says off.
//
// lan.conf also opens ipmi_sim's console on a loopback TCP port, through
// which Command runs emulator commands while it runs: sensor values and
// SEL entries change as they would on a real machine.
//
// ipmi_sim offers cipher suites 0 to 3 only and never answers Get Channel
// Cipher Suites: clients must pin a suite (ipmitool -C 3).
//
// With Config.Machine the chassis is a real machine instead (a qemu VM of
// the Redfish simulator): the chassis program appends each power, reset
// and boot device command to a request log, a bridge replays them in
// order on the machine and writes back the power state it reads from it.
// Power then changes some time after the command, as on real BMCs.
package ipmisim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Sim is a running ipmi_sim.
type Sim struct {
	Username string
	Password string
	Port     int
	// ConsolePort is ipmi_sim's console (TCP, loopback); see Command.
	ConsolePort int
	// Serial is the machine's serial port, which the BMC serves as
	// Serial-over-LAN (payload instance 1).
	Serial *Serial

	dir      string
	cmd      *exec.Cmd
	exited   chan struct{}
	stopOnce sync.Once

	machine    Machine
	bridgeStop chan struct{}
	bridgeDone chan struct{}
	bridgeMu   sync.Mutex
	bridgeErr  error
}

// Binary is the simulator executable looked up in PATH.
const Binary = "ipmi_sim"

// Available reports whether ipmi_sim is installed.
func Available() bool {
	_, err := exec.LookPath(Binary)
	return err == nil
}

// SkipIfUnavailable skips the test when ipmi_sim is missing, except in CI
// (CI=true), where a missing simulator is a broken runner and fails.
func SkipIfUnavailable(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found in PATH; CI must install the openipmi package", Binary)
	}
	t.Skipf("%s not found in PATH (install the openipmi package); skipping", Binary)
}

// Config sets up a simulator; the zero value is fine.
type Config struct {
	// Username of the admin user; default "admin". At most 16 bytes.
	Username string
	// Password of the admin user; default random, so that a test can
	// search output for it. At most 20 bytes, no double quotes.
	Password string
	// Machine, when set, is what the chassis controls (see the package
	// doc); the BMC's system GUID is then its UUID, bytes reversed (IPMI's
	// order).
	Machine Machine
	// ExtraTemperatures adds this many temperature sensors ("Temp 1",
	// ...; sensor numbers from 16, 30 °C, critical at 95 °C), for a
	// large SDR repository. At most 200.
	ExtraTemperatures int
}

// Machine is a computer behind the simulated BMC.
type Machine interface {
	// UUID is the machine's SMBIOS UUID.
	UUID() string
	// Powered reports whether it is on.
	Powered() (bool, error)
	SetPower(on bool) error
	// Reset restarts it (or starts it when off).
	Reset() error
	// SetBootDevice sets its next boot's device, by ipmi_sim's names:
	// "pxe", "cdrom", "bios", "default" (disk) or "none".
	SetBootDevice(dev string) error
}

// SerialLogger is a Machine whose serial console is written to a file
// (a qemu VM's serial.log): the BMC's Serial-over-LAN then shows what is
// appended to it. Keystrokes go nowhere (the file has no input side);
// Serial.Input still records them.
type SerialLogger interface {
	SerialLog() string
}

// Start runs a simulated BMC, powered off, and stops it when the test
// ends. It skips the test when ipmi_sim is not installed (fails under
// CI=true).
func Start(t testing.TB) *Sim {
	t.Helper()
	return StartWith(t, Config{})
}

// StartWith is Start with chosen credentials (for instance to restart a
// "BMC" that keeps its users).
func StartWith(t testing.TB, cfg Config) *Sim {
	t.Helper()
	SkipIfUnavailable(t)
	if cfg.Username == "" {
		cfg.Username = "admin"
	}
	if cfg.Password == "" {
		cfg.Password = "pw-" + randomHex(6)
	}
	if cfg.ExtraTemperatures < 0 || cfg.ExtraTemperatures > 200 {
		t.Fatalf("ipmisim: ExtraTemperatures %d out of 0-200", cfg.ExtraTemperatures)
	}
	if len(cfg.Username) > 16 || len(cfg.Password) > 20 || strings.ContainsAny(cfg.Username+cfg.Password, "\"\n\\") {
		t.Fatalf("ipmisim: user name must be at most 16 bytes, password at most 20, neither with quotes, backslashes or newlines")
	}

	dir, err := os.MkdirTemp("", "ipmisim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// The chassis program's path goes through ipmi_sim's config parser
	// and then sh -c; keep it free of anything either would interpret.
	if !regexp.MustCompile(`^[A-Za-z0-9/._-]+$`).MatchString(dir) {
		t.Fatalf("ipmisim: temporary directory %q has characters unsafe for a shell command; set TMPDIR", dir)
	}
	s := &Sim{Username: cfg.Username, Password: cfg.Password, dir: dir, machine: cfg.Machine}
	if s.Serial, err = newSerial(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Serial.close)
	for _, f := range []struct {
		name, body string
		mode       os.FileMode
	}{
		{"chassis", chassisScript(dir, cfg.Machine != nil), 0o755},
		{"power", "0\n", 0o644},
		{"boot", "default\n", 0o644},
		{"resets", "0\n", 0o644},
		{"cmds", emulatorCommands(cfg.ExtraTemperatures), 0o644},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}

	// A free port can be taken between our probe and ipmi_sim's bind;
	// retry with another.
	var lastErr error
	for range 5 {
		port, err := freeUDPPort()
		if err != nil {
			t.Fatal(err)
		}
		console, err := freeTCPPort()
		if err != nil {
			t.Fatal(err)
		}
		if lastErr = s.start(port, console); lastErr == nil {
			t.Cleanup(s.Stop)
			if s.machine != nil {
				s.startBridge()
			}
			if sl, ok := s.machine.(SerialLogger); ok {
				stop := make(chan struct{})
				go s.Serial.tail(sl.SerialLog(), stop)
				t.Cleanup(func() { close(stop) })
			}
			return s
		}
	}
	t.Fatalf("ipmisim: %v", lastErr)
	return nil
}

// Address is the BMC address for the IPMI driver: ipmi://127.0.0.1:PORT.
func (s *Sim) Address() string { return fmt.Sprintf("ipmi://127.0.0.1:%d", s.Port) }

// Power reports the simulated chassis power, as ipmi_sim last set it
// (with a Machine: as the bridge last read it).
func (s *Sim) Power() (bool, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "power"))
	if err != nil {
		return false, err
	}
	switch strings.TrimSpace(string(b)) {
	case "1":
		return true, nil
	case "0":
		return false, nil
	default:
		return false, fmt.Errorf("ipmisim: unexpected power state %q", b)
	}
}

// SetPower changes the simulated chassis power behind the BMC's back, as
// a person at the machine would.
func (s *Sim) SetPower(on bool) error {
	v := "0\n"
	if on {
		v = "1\n"
	}
	return writeAtomic(filepath.Join(s.dir, "power"), v)
}

// BootDevice is the boot device ipmi_sim last passed to the chassis
// program: "default" (none set yet, or disk), "none", "pxe", "cdrom" or
// "bios". ipmi_sim maps Set System Boot Options selectors to these names
// (disk is "default") and does not pass the persistent flag on.
func (s *Sim) BootDevice() (string, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "boot"))
	return strings.TrimSpace(string(b)), err
}

// Resets counts the hard resets the BMC performed.
func (s *Sim) Resets() (int, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "resets"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// IPMITool runs ipmitool against the simulator (lanplus, cipher suite 3;
// the password goes through the environment, not the command line) and
// returns its combined output.
func (s *Sim) IPMITool(ctx context.Context, args ...string) (string, error) {
	all := append([]string{"-I", "lanplus", "-H", "127.0.0.1", "-p", strconv.Itoa(s.Port),
		"-U", s.Username, "-E", "-C", "3", "-N", "1", "-R", "2"}, args...)
	cmd := exec.CommandContext(ctx, "ipmitool", all...)
	cmd.Env = append(os.Environ(), "IPMI_PASSWORD="+s.Password)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Stop kills the simulator; calls after the first do nothing. Start
// registers it as a cleanup. A stopped BMC's port refuses datagrams.
func (s *Sim) Stop() {
	s.stopOnce.Do(func() {
		if s.bridgeStop != nil {
			close(s.bridgeStop)
			<-s.bridgeDone
		}
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(3 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// start launches ipmi_sim on port (its console on console) and waits until it answers an RMCP
// presence ping.
func (s *Sim) start(port, console int) error {
	guid := randomHex(16)
	if s.machine != nil {
		u, err := hex.DecodeString(strings.ReplaceAll(s.machine.UUID(), "-", ""))
		if err != nil || len(u) != 16 {
			return fmt.Errorf("machine UUID %q is not a UUID", s.machine.UUID())
		}
		// Least significant byte first, as the IPMI spec orders a GUID:
		// not the order the machine's SMBIOS UUID reads in, so a client
		// matching the two must try the orders BMCs use.
		slices.Reverse(u)
		guid = hex.EncodeToString(u)
	}
	conf := lanConf(s.dir, port, console, s.Serial.addr(), s.Username, s.Password, guid)
	if err := os.WriteFile(filepath.Join(s.dir, "lan.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(s.dir, "ipmi_sim.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(Binary, "-c", filepath.Join(s.dir, "lan.conf"), "-f", filepath.Join(s.dir, "cmds"),
		"-s", filepath.Join(s.dir, "state"), "-n")
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", Binary, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			out, _ := os.ReadFile(filepath.Join(s.dir, "ipmi_sim.log"))
			return fmt.Errorf("%s exited at start on port %d: %s", Binary, port, bytes.TrimSpace(out))
		default:
		}
		if ping(port, 50*time.Millisecond) == nil {
			s.Port, s.ConsolePort, s.cmd, s.exited = port, console, cmd, exited
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("%s did not answer on 127.0.0.1:%d within 10s", Binary, port)
}

// ping sends an RMCP/ASF Presence Ping (IPMI v2.0 §13.2.3) and waits for
// any answer.
func ping(port int, wait time.Duration) error {
	conn, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer conn.Close()
	// RMCP header (v1.0, seq 0xff, class ASF), ASF IANA 4542, Presence
	// Ping, tag, reserved, data length 0.
	msg := []byte{0x06, 0x00, 0xff, 0x06, 0x00, 0x00, 0x11, 0xbe, 0x80, 0x01, 0x00, 0x00}
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 64)
	_, err = conn.Read(buf)
	return err
}

func freeUDPPort() (int, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port, nil
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeAtomic(path, body string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func lanConf(dir string, port, console int, serial, user, pass, guid string) string {
	return fmt.Sprintf(`# Written by ipmisim.Start; see ipmi_lan(5).
name "ipmisim"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 %d
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid %s
  endlan
  # Emulator commands at run time (Sim.Command); loopback only.
  console 127.0.0.1 %d
  chassis_control "%s/chassis 0x20"
  # Serial-over-LAN: the machine's serial port (Sim.Serial).
  sol "tcp:%s" 115200
  # num enabled name password max-priv max-sessions auths
  user 2 true "%s" "%s" admin 10 none md2 md5 straight
`, port, guid, console, dir, serial, user, pass)
}

// emulatorCommands sets up one BMC at IPMB address 0x20 (ipmi_sim_cmd(5))
// with a SEL of up to 1000 entries and the sensors of sensors.go.
func emulatorCommands(extraTemperatures int) string {
	return `# Written by ipmisim.Start; see ipmi_sim_cmd(5).
mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
sel_enable 0x20 1000 0x0a
` + sensorCommands(extraTemperatures) + `mc_enable 0x20
`
}

// chassisScript is the chassis_control program. ipmi_sim blocks while it
// runs, so it only reads and writes small files. With a machine, every
// power, reset and boot device command is also appended to "requests",
// one line each, which the bridge replays in order; "power" is then what
// the bridge read from the machine, not what was asked.
func chassisScript(dir string, machine bool) string {
	power := `    power) put power "$v" ;;
    shutdown) put power 0 ;; # the OS shuts down at once
    reset) put resets $(( $(cat "$dir/resets") + 1 )) ;;
    boot) put boot "$v" ;;
`
	if machine {
		power = `    power) req power "$v" ;;
    shutdown) req power 0 ;;
    reset) put resets $(( $(cat "$dir/resets") + 1 )); req reset 1 ;;
    boot) put boot "$v"; req boot "$v" ;;
`
	}
	return `#!/bin/sh
# chassis_control program for ipmi_sim, written by ipmisim.Start.
# ipmi_sim runs: chassis <mc> get <parm>... | chassis <mc> set <parm> <value>...
dir='` + dir + `'
put() { echo "$2" > "$dir/$1.tmp" && mv "$dir/$1.tmp" "$dir/$1"; }
# One short line per request, appended in one write.
req() { echo "$1 $2" >> "$dir/requests"; }
op=$2
shift 2
case "$op" in
get)
  for p in "$@"; do
    case "$p" in
    power) echo "power:$(cat "$dir/power")" ;;
    boot) echo "boot:$(cat "$dir/boot")" ;;
    *) echo "cannot get $p"; exit 1 ;;
    esac
  done ;;
set)
  while [ $# -ge 2 ]; do
    p=$1 v=$2
    shift 2
    case "$p" in
` + power + `    identify) ;;
    *) echo "cannot set $p"; exit 1 ;;
    esac
  done ;;
*) echo "unsupported operation $op"; exit 1 ;;
esac
`
}

// bridgeInterval is how often the bridge looks for requests and reads the
// machine's power.
const bridgeInterval = 100 * time.Millisecond

// startBridge runs the bridge between the chassis program and the machine
// until Stop: it replays the requests the program appended, each once and
// in the order the BMC got them (the same boot device twice, or off then
// on within one look, are two requests each), then writes back the
// machine's power state.
func (s *Sim) startBridge() {
	s.bridgeStop, s.bridgeDone = make(chan struct{}), make(chan struct{})
	var offset int64
	lastPower := ""
	apply := func(line string) error {
		kind, v, _ := strings.Cut(line, " ")
		switch kind {
		case "power":
			return s.machine.SetPower(v == "1")
		case "reset":
			return s.machine.Reset()
		case "boot":
			return s.machine.SetBootDevice(v)
		}
		return fmt.Errorf("unknown request %q", line)
	}
	go func() {
		defer close(s.bridgeDone)
		t := time.NewTicker(bridgeInterval)
		defer t.Stop()
		for {
			select {
			case <-s.bridgeStop:
				return
			case <-t.C:
			}
			var errs []error
			b, err := os.ReadFile(filepath.Join(s.dir, "requests"))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			if int64(len(b)) > offset {
				news := b[offset:]
				// Only whole lines: a line is one write, but a read may
				// still land in the middle of one.
				if end := bytes.LastIndexByte(news, '\n'); end >= 0 {
					for _, line := range strings.Split(string(news[:end]), "\n") {
						if err := apply(line); err != nil {
							errs = append(errs, fmt.Errorf("%s: %w", line, err))
						}
					}
					offset += int64(end + 1)
				}
			}
			on, err := s.machine.Powered()
			if err != nil {
				errs = append(errs, fmt.Errorf("power state: %w", err))
			} else if p := map[bool]string{true: "1", false: "0"}[on]; p != lastPower {
				if err := writeAtomic(filepath.Join(s.dir, "power"), p+"\n"); err != nil {
					errs = append(errs, err)
				} else {
					lastPower = p
				}
			}
			if len(errs) > 0 {
				s.bridgeMu.Lock()
				s.bridgeErr = errors.Join(errs...)
				s.bridgeMu.Unlock()
			}
		}
	}()
}

// BridgeErr is the bridge's last failure to drive the machine (nil: none
// so far).
func (s *Sim) BridgeErr() error {
	s.bridgeMu.Lock()
	defer s.bridgeMu.Unlock()
	return s.bridgeErr
}
