package sim

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is a misbehaviour injected into one simulated system.
type Fault string

const (
	FaultNone  Fault = ""
	FaultDown  Fault = "down"  // connection closed without an answer
	FaultHang  Fault = "hang"  // no answer until the client gives up
	FaultSlow  Fault = "slow"  // answer after Options.SlowDelay
	FaultError Fault = "error" // HTTP 500 with a Redfish extended error
	FaultAuth  Fault = "auth"  // HTTP 401 whatever the credentials
	FaultFlap  Fault = "flap"  // alternate down / healthy per request
)

// ParseFault accepts a fault name; "none" and "" both mean FaultNone.
func ParseFault(s string) (Fault, error) {
	switch f := Fault(strings.ToLower(strings.TrimSpace(s))); f {
	case FaultNone, FaultDown, FaultHang, FaultSlow, FaultError, FaultAuth, FaultFlap:
		return f, nil
	case "none":
		return FaultNone, nil
	default:
		return "", fmt.Errorf("sim: unknown fault %q (want none, down, hang, slow, error, auth or flap)", s)
	}
}

// Options configures a Fleet. The zero value is one plain-HTTP system on
// 127.0.0.1 with admin/password.
type Options struct {
	Listen  string // default "127.0.0.1:0"
	Systems int    // number of systems, ids "1".."N" unless IDs given (default 1)
	// IDs, when set, names the systems explicitly (Systems is then ignored).
	IDs                []string
	Username, Password string        // default "admin"/"password"
	TLS                bool          // self-signed cert (clients need insecure, or CertPool)
	Latency            time.Duration // added to every system request
	// ServiceLatency is added to every Redfish request (the service root,
	// sessions and collections too; a system request gets Latency as
	// well): a BMC slow at everything, as most are.
	ServiceLatency   time.Duration
	SlowDelay        time.Duration // delay of FaultSlow (default 3s)
	PowerDelay       time.Duration // power changes land this long after a Reset; 0 = immediate
	NoSessionService bool          // serve no SessionService (basic auth only)
	// TrailingSlashIDs writes every @odata.id with a trailing slash, as
	// iLO does (Quirks.TrailingSlash; the ilo5 dialect has it too).
	TrailingSlashIDs bool

	// MediaSlots names each system's virtual media slots, in the order the
	// BMC lists them (default DefaultMediaSlots: "CD" and "USB1"). A name's
	// prefix sets the slot's kind: "cd"/"dvd" (MediaTypes CD, DVD), "usb"
	// (USBStick), "floppy"/"fd" (Floppy), "removable" (no MediaTypes and no
	// Inserted property, like some real BMCs). {"CD"} is a single-slot BMC.
	MediaSlots []string
	// FetchCDMedia makes CD slots fetch their images at insert time too,
	// as sushy-tools, iDRAC and iLO do (by default only the other slots
	// do: boot images in tests are fake URLs). An image that cannot be
	// fetched then fails InsertMedia. Needed for the simulated OS to read a
	// config drive from a CD. DialectSushy implies it.
	FetchCDMedia bool
	// NoVirtualMedia serves no VirtualMedia at all, as on BMCs without
	// the licence or the feature: the controller must boot such systems
	// from the network.
	NoVirtualMedia bool
	// Dialect picks the Redfish implementation the fleet imitates: the
	// default is standard Redfish; DialectSushy is sushy-tools (see there);
	// the vendor dialects (VendorDialects: DialectIDRAC9, DialectILO5, ...)
	// are real BMCs' quirks (see Quirks). Without MediaSlots, a sushy
	// system has the slots Cd and Floppy, a vendor's system its slots.
	Dialect Dialect
	// Tweak, when set, changes the dialect's quirks before the fleet
	// starts: a test turns one quirk on or off.
	Tweak func(*Quirks)
	// OSBootDelay is how long after a power-on lands the simulated OS
	// calls the config drive's ready URL (0: at once). Negative disables
	// the simulated OS, as NoOS does.
	OSBootDelay time.Duration
	// NoOS starts every system without a simulated OS (SetOS turns it on).
	NoOS bool
	// Machine, when set, gives every system simulated hardware that boots
	// the deploy agent from its virtual CD or the network and the
	// simulated OS from its disks (see MachineOptions and the package
	// doc). Not with VM.
	Machine *MachineOptions
	// VM, when set, backs every system with a real qemu virtual machine
	// instead of the simulated power state and OS (see VMOptions and the
	// package doc). Keep such fleets small: each running VM is a qemu
	// process of up to MaxVMMemoryMB.
	VM *VMOptions
	// StateFile, when set, keeps each system's power, boot override,
	// media and faults across restarts of the fleet (see state.go).
	StateFile string
}

// Fleet is a running simulated Redfish service.
type Fleet struct {
	opts     Options
	q        *Quirks // the dialect's, shared by every system
	tasks    taskTable
	ln       net.Listener
	extra    sync.WaitGroup // Serve loops of ServeAlso
	srv      *http.Server
	url      string
	certPool *x509.CertPool

	systems  map[string]*system // by id
	managers map[string]*system // by the id of its Manager
	order    []*system
	sysColl  []byte // precomputed Systems collection
	mgrColl  []byte // precomputed Managers collection
	rootJSON []byte
	// chassisColl is the Chassis collection (health.go).
	chassisColl []byte
	uuid        string

	total atomic.Int64

	netbootMu sync.Mutex
	netboot   string // VMOptions.NetbootURL, or as set later

	// machineTemp is the machines' directory when the fleet made it
	// (removed at Close).
	machineTemp string

	// life ends when the fleet closes; background work (simulated OSes,
	// image fetches) runs under it and bg counts those goroutines.
	life     context.Context
	stopLife context.CancelFunc
	bg       sync.WaitGroup
	client   *http.Client // fetches images, calls ready URLs
	// mediaClient fetches VM media: no overall timeout (images are large;
	// vmFetchTimeout bounds each fetch).
	mediaClient *http.Client

	sessMu      sync.RWMutex
	sessions    map[string]*session // by token
	sessionByID map[string]*session
	nextSession uint64
	logins      atomic.Int64

	// in-flight handler accounting, so Close leaves no goroutine behind.
	lifeMu    sync.RWMutex
	closed    bool
	inflight  sync.WaitGroup
	done      chan struct{}
	serveDone chan struct{}
	closeOnce sync.Once

	// stateMu serializes writes of Options.StateFile; stateSaved is
	// what it holds.
	stateMu    sync.Mutex
	stateSaved []byte
}

type session struct {
	id, token, user string
	created         time.Time
}

type system struct {
	id, path, mgrPath string
	sushy             bool // Options.Dialect is DialectSushy
	q                 *Quirks
	cpu               CPUShape
	noMedia           bool // Options.NoVirtualMedia
	index             int
	uuid, serial      string
	requests          atomic.Int64

	mu          sync.Mutex
	fault       Fault
	flapFail    bool // the next request of a flapping system fails
	power       bool
	ignorePower bool
	powerSeq    uint64
	pending     *time.Timer
	bootTarget  string
	bootEnabled string
	bootMode    string
	// pendingBoot is a boot override written to the settings object
	// (Quirks.BootViaSettings), applied at the next reset or power-on.
	pendingBoot *bootPatch
	// bios holds the BIOS attributes in effect but BootMode, which is
	// bootMode's view; biosPending those written to the settings object
	// and not yet applied; biosJob: they were written with
	// @Redfish.SettingsApplyTime (BIOSQuirks.ApplyTimeRequired);
	// biosVersion is the settings object's ETag.
	bios        map[string]any
	biosPending map[string]any
	biosJob     bool
	biosVersion uint64
	// secureBoot is SecureBootEnable (the setting, for the next boot),
	// secureBootNow SecureBootCurrentBoot (the running boot's).
	secureBoot, secureBootNow bool
	// fw is the system's firmware (update.go).
	fw firmwareState
	// storage is the RAID controller (storage.go), made on first use.
	storage *storageState
	// health is the sensors and event log (health.go), made on first use.
	health *healthState
	// version counts the changes of the system's state: its ETag.
	version uint64
	slots   []*mediaSlot // fixed at Start; their state is guarded by mu
	// vm is the qemu machine behind the system (Options.VM), else nil.
	// It is set at Start and never changes.
	vm *vmachine
	// machine is the simulated hardware (Options.Machine), else nil. It
	// is set at Start and never changes.
	machine *machine

	// The simulated OS.
	osEnabled   bool
	osSeq       uint64             // bumped by every power change: stale callbacks stop
	osCancel    context.CancelFunc // non-nil while a callback is pending
	powerOns    int
	readyCalls  int
	readyStatus int
	readyErr    string
}

// Start builds the fleet and serves it until Close.
func Start(opts Options) (*Fleet, error) {
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.Username == "" {
		opts.Username = "admin"
	}
	if opts.Password == "" {
		opts.Password = "password"
	}
	if opts.SlowDelay <= 0 {
		opts.SlowDelay = 3 * time.Second
	}
	dialect, err := ParseDialect(string(opts.Dialect))
	if err != nil {
		return nil, err
	}
	opts.Dialect = dialect
	sushy := dialect == DialectSushy
	if sushy {
		opts.FetchCDMedia = true
		if len(opts.MediaSlots) == 0 {
			opts.MediaSlots = sushyMediaSlots
		}
	}
	quirks := DialectQuirks(dialect)
	quirks.Storage = dialectStorage(dialect)
	quirks.Health = dialectHealth(dialect)
	if opts.TrailingSlashIDs {
		quirks.TrailingSlash = true
	}
	if opts.Tweak != nil {
		opts.Tweak(&quirks)
	}
	if len(opts.MediaSlots) == 0 {
		opts.MediaSlots = quirks.MediaSlots
	}
	quirks.CPU = quirks.CPU.withDefaults()
	if quirks.MemoryGiB <= 0 {
		quirks.MemoryGiB = 64
	}
	vendorIDs := len(opts.IDs) == 0 && quirks.SystemID != nil
	if vendorIDs {
		n := max(opts.Systems, 1)
		opts.IDs = make([]string, n)
		for i := range opts.IDs {
			opts.IDs[i] = quirks.SystemID(i)
		}
	}
	ids := opts.IDs
	if len(ids) == 0 {
		n := opts.Systems
		if n <= 0 {
			n = 1
		}
		ids = make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprint(i + 1)
		}
	}
	if _, err := parseSlots(opts.MediaSlots, opts.FetchCDMedia, quirks.slotKinds); err != nil {
		return nil, err
	}
	for slot := range quirks.OperatorMedia {
		if !slices.ContainsFunc(opts.MediaSlots, func(n string) bool { return strings.EqualFold(n, slot) }) {
			return nil, fmt.Errorf("sim: operator media in slot %q, which the systems do not have", slot)
		}
	}
	var vmOpts VMOptions
	if opts.VM != nil {
		if vmOpts, err = resolveVMOptions(*opts.VM, len(opts.MediaSlots)); err != nil {
			return nil, err
		}
	}
	osEnabled := !opts.NoOS && opts.OSBootDelay >= 0 && opts.VM == nil
	f := &Fleet{
		opts:        opts,
		systems:     make(map[string]*system, len(ids)),
		managers:    make(map[string]*system, len(ids)),
		order:       make([]*system, 0, len(ids)),
		sessions:    make(map[string]*session),
		sessionByID: make(map[string]*session),
		done:        make(chan struct{}),
		serveDone:   make(chan struct{}),
		uuid:        nameUUID("fleet"),
		q:           &quirks,
		client:      newClient(),
		mediaClient: &http.Client{Transport: newTransport()},
	}
	f.life, f.stopLife = context.WithCancel(context.Background())
	f.netboot = vmOpts.NetbootURL
	for i, id := range ids {
		if id == "" || strings.ContainsAny(id, "/?#% ") {
			return nil, fmt.Errorf("sim: invalid system id %q", id)
		}
		if _, dup := f.systems[id]; dup {
			return nil, fmt.Errorf("sim: duplicate system id %q", id)
		}
		mgrID := id
		if vendorIDs && quirks.ManagerID != nil {
			mgrID = quirks.ManagerID(i)
		}
		if _, dup := f.managers[mgrID]; dup {
			return nil, fmt.Errorf("sim: duplicate manager id %q", mgrID)
		}
		s := &system{
			id:          id,
			index:       i,
			path:        systemsPath + "/" + id,
			mgrPath:     managersPath + "/" + mgrID,
			q:           &quirks,
			cpu:         quirks.CPU,
			uuid:        nameUUID("system/" + id),
			serial:      fmt.Sprintf("SIM%07d", i+1),
			bootTarget:  "None",
			bootEnabled: "Disabled",
			bootMode:    "UEFI",
			osEnabled:   osEnabled,
			sushy:       sushy,
			noMedia:     opts.NoVirtualMedia,
		}
		if sushy {
			// libvirt boots its disk, every time.
			s.bootTarget, s.bootEnabled = "Hdd", "Continuous"
		}
		if quirks.BootMode != "" {
			s.bootMode = quirks.BootMode
		}
		s.bios = f.defaultBIOS(s)
		s.biosPending = map[string]any{}
		f.initFirmware(s)
		s.slots, _ = parseSlots(opts.MediaSlots, opts.FetchCDMedia, quirks.slotKinds)
		for _, m := range s.slots {
			for slot, img := range quirks.OperatorMedia {
				if strings.EqualFold(m.id, slot) {
					m.image, m.inserted = img, true
				}
			}
		}
		if opts.VM != nil {
			if s.vm, err = f.newVM(s, vmOpts); err != nil {
				f.stopLife()
				return nil, err
			}
			if !s.sushy {
				// The agent ISO boots through the BIOS; UEFI is asked for.
				s.bootMode = "Legacy"
			}
			if vmOpts.UEFI {
				s.bootMode = "UEFI"
			}
		}
		f.systems[id] = s
		f.managers[mgrID] = s
		f.order = append(f.order, s)
	}
	f.buildStatic()
	if err := f.loadState(); err != nil {
		f.stopLife()
		return nil, err
	}

	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		f.stopLife()
		return nil, fmt.Errorf("sim: listen: %w", err)
	}
	scheme := "http"
	if opts.TLS {
		cert, pool, err := selfSigned(ln.Addr())
		if err != nil {
			ln.Close()
			f.stopLife()
			return nil, err
		}
		f.certPool = pool
		ln = tls.NewListener(ln, &tls.Config{
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"http/1.1"},
		})
		scheme = "https"
	}
	f.ln = ln
	if err := f.startMachines(); err != nil {
		ln.Close()
		f.stopLife()
		return nil, err
	}
	f.url = scheme + "://" + ln.Addr().String()
	f.srv = &http.Server{
		Handler:           f,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// HTTP/1.1 only: FaultDown hijacks the connection, as a crashing
		// BMC would drop it, and most real BMCs speak HTTP/1.1 anyway.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		// Clients that refuse our self-signed cert would otherwise spam the log.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(f.serveDone)
		_ = f.srv.Serve(ln)
	}()
	for _, s := range f.order {
		if s.vm != nil {
			f.goBackground(s.vm.run)
		}
	}
	f.startStateSaver()
	return f, nil
}

// URL is the service's base URL, e.g. http://127.0.0.1:41234.
func (f *Fleet) URL() string { return f.url }

// SetNetbootURL sets the boot file the VM-backed systems' network hands a
// PXE boot from their next start on (VMOptions.NetbootURL): a test learns
// the controller's address only after the fleet runs.
func (f *Fleet) SetNetbootURL(u string) {
	f.netbootMu.Lock()
	defer f.netbootMu.Unlock()
	f.netboot = u
}

func (f *Fleet) netbootURL() string {
	f.netbootMu.Lock()
	defer f.netbootMu.Unlock()
	return f.netboot
}

// ServeAlso serves the fleet on one more address (plain HTTP) and returns
// its base URL; Close stops it too. A fleet behind one address is one BMC
// to the controller, which caps its concurrent requests per BMC: spreading
// the systems over several loopback addresses (127.0.0.2, 127.0.0.3, ...)
// makes a benchmark's fleet look like many BMCs, as a rack is.
func (f *Fleet) ServeAlso(addr string) (string, error) {
	if f.certPool != nil {
		return "", errors.New("sim: ServeAlso serves plain HTTP only")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("sim: listen: %w", err)
	}
	f.extra.Go(func() { _ = f.srv.Serve(ln) })
	return "http://" + ln.Addr().String(), nil
}

// CertPool trusts the fleet's self-signed certificate (nil without TLS).
func (f *Fleet) CertPool() *x509.CertPool { return f.certPool }

// SystemIDs returns every system's path, e.g. /redfish/v1/Systems/1, in
// creation order.
func (f *Fleet) SystemIDs() []string {
	out := make([]string, len(f.order))
	for i, s := range f.order {
		out[i] = s.path
	}
	return out
}

// Handler is the Redfish + control handler, for mounting on another server.
func (f *Fleet) Handler() http.Handler { return f }

func (f *Fleet) lookup(system string) (*system, error) {
	id := strings.TrimSuffix(system, "/")
	if rest, ok := strings.CutPrefix(id, systemsPath+"/"); ok {
		id = rest
	}
	if s := f.systems[id]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("sim: no system %q", system)
}

// SetFault injects fault into one system (id "7" or path); FaultNone clears.
func (f *Fleet) SetFault(system string, fault Fault) error {
	fault, err := ParseFault(string(fault))
	if err != nil {
		return err
	}
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	s.setFault(fault)
	return nil
}

// SetAllFaults injects fault into every system.
func (f *Fleet) SetAllFaults(fault Fault) {
	for _, s := range f.order {
		s.setFault(fault)
	}
}

func (s *system) setFault(fault Fault) {
	s.mu.Lock()
	s.fault = fault
	s.flapFail = true
	s.mu.Unlock()
}

// Power returns "On" or "Off" as the sim holds it (a pending delayed change
// is not visible yet). A VM-backed system says what qemu reports, which
// may also be PoweringOn or PoweringOff.
func (f *Fleet) Power(system string) (string, error) {
	s, err := f.lookup(system)
	if err != nil {
		return "", err
	}
	if s.vm != nil {
		return s.vm.powerState(f.life), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return powerString(s.power), nil
}

// SetPower sets the power state at once, cancelling a pending change. Off
// to on boots the simulated OS. A VM-backed system starts its qemu, or
// stops it as ForceOff does; the power state lands when qemu reports it.
func (f *Fleet) SetPower(system string, on bool) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	if s.vm != nil {
		op := vmOp{kind: opOff}
		if on {
			op.kind = opOn
		}
		if err := s.vm.do(f.life, op); err != nil {
			return fmt.Errorf("sim: system %s: %w", s.id, err)
		}
		return nil
	}
	s.mu.Lock()
	s.cancelPendingLocked()
	f.applyPowerLocked(s, on, false)
	s.mu.Unlock()
	return nil
}

// SetIgnorePower makes Reset succeed without ever changing the power state.
func (f *Fleet) SetIgnorePower(system string, ignore bool) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ignorePower = ignore
	s.mu.Unlock()
	return nil
}

// BootOverride returns BootSourceOverrideTarget and BootSourceOverrideEnabled.
func (f *Fleet) BootOverride(system string) (target, enabled string, err error) {
	s, err := f.lookup(system)
	if err != nil {
		return "", "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bootTarget, s.bootEnabled, nil
}

// BootMode returns BootSourceOverrideMode ("UEFI" or "Legacy").
func (f *Fleet) BootMode(system string) (string, error) {
	s, err := f.lookup(system)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bootMode, nil
}

// Media returns the virtual CD's image and whether it is inserted (the
// first CD slot; see MediaSlots and SlotMedia for the others).
func (f *Fleet) Media(system string) (image string, inserted bool, err error) {
	s, err := f.lookup(system)
	if err != nil {
		return "", false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.bootSlotLocked()
	return m.image, m.inserted, nil
}

// Requests counts the HTTP requests that touched that system (its
// ComputerSystem, sub-resources and Manager), whatever their outcome.
func (f *Fleet) Requests(system string) int64 {
	s, err := f.lookup(system)
	if err != nil {
		return 0
	}
	return s.requests.Load()
}

// TotalRequests counts every Redfish request (not the /sim control API).
func (f *Fleet) TotalRequests() int64 { return f.total.Load() }

// Logins counts sessions created so far.
func (f *Fleet) Logins() int64 { return f.logins.Load() }

// Sessions is the number of live sessions.
func (f *Fleet) Sessions() int {
	f.sessMu.RLock()
	defer f.sessMu.RUnlock()
	return len(f.sessions)
}

// DropSessions forgets every session, as a rebooted BMC or an expiry would:
// clients holding a token get 401 until they log in again.
func (f *Fleet) DropSessions() {
	f.sessMu.Lock()
	clear(f.sessions)
	clear(f.sessionByID)
	f.sessMu.Unlock()
}

// Close stops the server, drops every connection (ending hung requests),
// cancels image fetches and simulated OS callbacks, and waits for all
// handlers and callbacks to return; then it writes Options.StateFile.
func (f *Fleet) Close() error {
	var err, stateErr error
	f.closeOnce.Do(func() {
		f.lifeMu.Lock()
		f.closed = true
		close(f.done)
		f.lifeMu.Unlock()
		f.stopLife()
		err = f.srv.Close()
		<-f.serveDone
		f.extra.Wait()
		f.inflight.Wait()
		for _, s := range f.order {
			s.mu.Lock()
			s.cancelPendingLocked()
			s.stopOSLocked()
			s.mu.Unlock()
		}
		f.bg.Wait()
		stateErr = f.saveState()
	})
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, stateErr)
}

// enter registers an in-flight request; false once the fleet is closed.
func (f *Fleet) enter() bool {
	f.lifeMu.RLock()
	defer f.lifeMu.RUnlock()
	if f.closed {
		return false
	}
	f.inflight.Add(1)
	return true
}

func powerString(on bool) string {
	if on {
		return "On"
	}
	return "Off"
}

// nameUUID is a stable, RFC 4122-shaped (version 5 style) UUID for a name,
// so a system keeps its UUID across restarts of the sim.
func nameUUID(name string) string {
	h := sha1.Sum([]byte("baremetal-sim/" + name))
	h[6] = (h[6] & 0x0f) | 0x50
	h[8] = (h[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
