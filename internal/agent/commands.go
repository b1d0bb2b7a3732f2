package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/disk"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Erase methods of an erase command.
const (
	EraseMetadata = "metadata"
	EraseFull     = "full"
)

// DefaultMaxConfigDrive bounds a config drive download: the controller
// builds drives of a few hundred KiB, and the agent holds the drive in
// memory (it is tmpfs-rooted, with no disk of its own to spool to).
const DefaultMaxConfigDrive = 64 << 20

// Runner runs the commands the controller hands out (api.AgentCommand)
// on this machine's disks: one at a time, in the background, so the
// heartbeats go on and report how it stands. A command ID is run once per
// boot: handed out again while running it is not restarted, and after it
// finished its outcome is reported again instead of redoing the work (a
// controller that missed the report must not get an image written twice,
// or a freshly written disk erased).
type Runner struct {
	// SysRoot is where sysfs is mounted ("/sys" when empty): disks are
	// listed from its block directory.
	SysRoot string
	// DevPath maps a kernel disk name ("vda") to the file to open; nil
	// means /dev/<name>. Tests map names to regular files standing for
	// disks.
	DevPath func(name string) string
	// Write tunes disk.Write; the runner sets its Progress and Logf.
	Write disk.Options
	// Client fetches config drives; nil means one with a two-minute
	// timeout.
	Client *http.Client
	// MaxConfigDrive bounds a config drive's size (0: DefaultMaxConfigDrive).
	MaxConfigDrive int64
	Log            *slog.Logger

	mu sync.Mutex
	// cur is the command heartbeats report on; nil when there is none.
	cur *api.AgentCommandStatus
	// reported is true once a heartbeat the controller accepted carried
	// cur in its final state.
	reported bool
	// done holds the outcome of every command finished in this boot.
	done map[string]api.AgentCommandStatus
	// refused names the last command turned away, so the refusal is
	// logged once rather than on every heartbeat.
	refused string
	wake    chan struct{}
	// running counts the goroutines of started commands (Wait).
	running sync.WaitGroup
}

// Status is the report on the current command for the next heartbeat, or
// nil when there is none.
func (r *Runner) Status() *api.AgentCommandStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return nil
	}
	st := *r.cur
	return &st
}

// Finished fires (at most one pending signal) when a command finishes,
// so the loop can report it without waiting out its interval.
func (r *Runner) Finished() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wakeLocked()
}

func (r *Runner) wakeLocked() chan struct{} {
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	return r.wake
}

// Reply takes in the controller's answer to a heartbeat that carried
// sent: it starts cmd unless that command is already known, and stops
// reporting a finished command once the controller has been told and
// hands it out no more (as the protocol asks). It returns true when
// sent was the first accepted report of a command's outcome.
func (r *Runner) Reply(ctx context.Context, sent *api.AgentCommandStatus, cmd *api.AgentCommand) (firstOutcome bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sent != nil && sent.State != api.AgentCommandRunning && r.cur != nil && r.cur.ID == sent.ID {
		firstOutcome = !r.reported
		r.reported = true
		if cmd == nil || cmd.ID != sent.ID {
			r.cur = nil
		}
	}
	if cmd != nil {
		r.startLocked(ctx, *cmd)
	}
	return firstOutcome
}

func (r *Runner) startLocked(ctx context.Context, cmd api.AgentCommand) {
	log := r.log()
	refuse := func(msg string, args ...any) {
		if key := "id:" + cmd.ID; r.refused != key {
			r.refused = key
			log.Warn(msg, args...)
		}
	}
	switch {
	case cmd.ID == "":
		// Without an id the outcome could not be reported.
		refuse("the controller handed out a command without an id; not running it", "kind", cmd.Kind)
		return
	case r.cur != nil && r.cur.ID == cmd.ID:
		return // running, or finished and being reported
	}
	if st, ok := r.done[cmd.ID]; ok {
		// Finished before and no longer reported: report it again.
		r.cur, r.reported = &st, false
		return
	}
	if r.cur != nil && r.cur.State == api.AgentCommandRunning {
		refuse("busy with another command; the new one waits until it finishes", "running", r.cur.ID, "handed_out", cmd.ID, "kind", cmd.Kind)
		return
	}
	r.cur = &api.AgentCommandStatus{ID: cmd.ID, State: api.AgentCommandRunning}
	r.reported = false
	log.Info("command started", "command", cmd.ID, "kind", cmd.Kind)
	r.running.Go(func() { r.run(ctx, cmd) })
}

// Wait returns once no command runs: after its context ends, a command
// stops soon. The agent as PID 1 never waits; a simulated machine
// (internal/bmc/sim) that loses power does, so that nothing of the lost
// boot touches its disks afterwards.
func (r *Runner) Wait() { r.running.Wait() }

// run executes cmd and records its outcome. A panic is the command's
// failure, not the agent's end: as PID 1 the agent must not exit.
func (r *Runner) run(ctx context.Context, cmd api.AgentCommand) {
	start := time.Now()
	st := api.AgentCommandStatus{ID: cmd.ID}
	func() {
		defer func() {
			if p := recover(); p != nil {
				st.Message, st.Input = fmt.Sprintf("%s failed: agent bug: %v", cmd.Kind, p), false
				st.State = api.AgentCommandFailed
			}
		}()
		msg, dev, erased, err := r.execute(ctx, cmd)
		st.Disk = dev
		if err != nil {
			st.State, st.Message, st.Input = api.AgentCommandFailed, err.Error(), errors.Is(err, disk.ErrInput)
			if ctx.Err() != nil {
				st.Message = fmt.Sprintf("%s interrupted: the agent is stopping (%v)", cmd.Kind, err)
			}
			return
		}
		st.State, st.Message, st.Erased = api.AgentCommandSucceeded, msg, erased
	}()
	log := r.log().With("command", cmd.ID, "kind", cmd.Kind, "took", time.Since(start).Round(time.Millisecond))
	if st.State == api.AgentCommandSucceeded {
		log.Info("command succeeded", "message", st.Message)
	} else {
		log.Error("command failed", "message", st.Message, "input", st.Input)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		r.done = map[string]api.AgentCommandStatus{}
	}
	r.done[cmd.ID] = st
	if r.cur != nil && r.cur.ID == cmd.ID {
		*r.cur = st
	}
	select {
	case r.wakeLocked() <- struct{}{}:
	default:
	}
}

// progress records a running command's percentage; 100 is kept for the
// finished state.
func (r *Runner) progress(id string, pct int) {
	pct = min(max(pct, 0), 99)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil && r.cur.ID == id && r.cur.State == api.AgentCommandRunning {
		r.cur.Progress = pct
	}
}

func (r *Runner) execute(ctx context.Context, cmd api.AgentCommand) (msg, dev string, erased []api.AgentErasedDisk, err error) {
	switch cmd.Kind {
	case api.AgentWriteImage:
		msg, dev, err := r.writeImage(ctx, cmd)
		return msg, dev, nil, err
	case api.AgentErase:
		msg, erased, err := r.erase(ctx, cmd)
		return msg, "", erased, err
	}
	return "", "", nil, fmt.Errorf("unknown command kind %q (this agent knows %s)", cmd.Kind, strings.Join(api.AgentCommandKinds(), ", "))
}

func (r *Runner) writeImage(ctx context.Context, cmd api.AgentCommand) (msg, dev string, err error) {
	if cmd.Image == nil || cmd.Image.URL == "" {
		return "", "", errors.New("write_image command without an image URL")
	}
	hints, err := ParseHints(cmd.RootDeviceHints)
	if err != nil {
		return "", "", err
	}
	disks, err := disk.ListDisks(r.sysRoot())
	if err != nil {
		return "", "", err
	}
	root, err := disk.ChooseRootDisk(disks, hints)
	if err != nil {
		return "", "", err
	}
	dev = r.devPath(root.Name)
	shown := disk.RedactURL(cmd.Image.URL)
	log := r.log().With("command", cmd.ID)
	log.Info("writing image", "image", shown, "disk", dev, "disk_size", size(root.Size), "hints", hints.String())

	opts := r.Write
	opts.Progress = func(p disk.Progress) {
		if p.Size > 0 {
			r.progress(cmd.ID, int(p.Downloaded*100/p.Size))
		}
	}
	opts.Logf = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	res, err := disk.Write(ctx, disk.Source{URL: cmd.Image.URL, Checksum: cmd.Image.Checksum}, disk.Target{Path: dev}, opts)
	if err != nil {
		r.scrub(dev, log)
		return "", dev, err
	}
	var b strings.Builder
	kind := res.Format
	switch {
	case res.Container != "" && res.Format == "raw":
		kind = res.Container
	case res.Container != "":
		kind = res.Format + "-compressed " + res.Container
	}
	fmt.Fprintf(&b, "wrote %s %s image to %s in %s", size(res.Written), kind, dev, res.Duration.Round(100*time.Millisecond))
	if cmd.Image.Checksum != "" {
		fmt.Fprintf(&b, ", %s verified", res.Digest.Algo)
	} else {
		fmt.Fprintf(&b, ", no checksum given (%s)", res.Digest)
	}
	if res.Resumes > 0 || res.Restarts > 0 {
		fmt.Fprintf(&b, ", download resumed %d and restarted %d times", res.Resumes, res.Restarts)
	}
	if cmd.ConfigDriveURL != "" {
		iso, err := r.fetchConfigDrive(ctx, cmd.ConfigDriveURL)
		if err != nil {
			r.scrub(dev, log)
			return "", dev, err
		}
		if err := disk.AppendConfigDrive(ctx, dev, iso); err != nil {
			r.scrub(dev, log)
			return "", dev, err
		}
		fmt.Fprintf(&b, "; config drive (%s) added as partition %s", size(int64(len(iso))), disk.ConfigDriveLabel)
	}
	return b.String(), dev, nil
}

// scrub wipes the signatures of a disk whose write failed, so that a
// half-written or unverified image can never be booted by mistake (the
// controller cleans the node anyway; this is the belt to its braces).
// Best effort: the disk may be the very thing that failed.
func (r *Runner) scrub(dev string, log *slog.Logger) {
	// Not the command's context: a cancelled write still deserves it,
	// and it takes a fraction of a second.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := disk.EraseMetadata(ctx, dev); err != nil {
		log.Warn("could not wipe the signatures of the failed write", "disk", dev, "error", err)
	}
}

// fetchConfigDrive downloads the config drive ISO. Its URL carries a key
// in its path, so neither errors nor logs show it. Failures are not the
// user's input: the controller serves the drive.
func (r *Runner) fetchConfigDrive(ctx context.Context, rawURL string) ([]byte, error) {
	limit := r.MaxConfigDrive
	if limit <= 0 {
		limit = DefaultMaxConfigDrive
	}
	client := r.Client
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Minute}
	}
	var last error
	for attempt := range 3 {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt) * time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		b, retry, err := getBounded(ctx, client, rawURL, limit)
		if err == nil {
			return b, nil
		}
		last = err
		if !retry {
			break
		}
	}
	return nil, fmt.Errorf("config drive download: %w", last)
}

func getBounded(ctx context.Context, client *http.Client, rawURL string, limit int64) (b []byte, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, false, errors.New("malformed URL")
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		// *url.Error quotes the URL: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, true, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode >= 500, fmt.Errorf("HTTP %s", resp.Status)
	}
	if resp.ContentLength > limit {
		return nil, false, fmt.Errorf("%s, larger than the %s allowed", size(resp.ContentLength), size(limit))
	}
	b, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, true, fmt.Errorf("read: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, false, fmt.Errorf("larger than the %s allowed", size(limit))
	}
	return b, false, nil
}

// erase erases every non-removable disk and reports, per disk, what it
// did and read back afterwards (the controller counts an erase only with
// that).
func (r *Runner) erase(ctx context.Context, cmd api.AgentCommand) (string, []api.AgentErasedDisk, error) {
	method := cmd.Erase
	if method == "" {
		method = EraseMetadata
	}
	if method != EraseMetadata && method != EraseFull {
		return "", nil, fmt.Errorf("unknown erase method %q (want %s or %s)", method, EraseMetadata, EraseFull)
	}
	all, err := disk.ListDisks(r.sysRoot())
	if err != nil {
		return "", nil, err
	}
	var disks []disk.Disk
	var total int64
	for _, d := range all {
		if !d.Removable {
			disks = append(disks, d)
			total += d.Size
		}
	}
	if len(disks) == 0 {
		// Success here would pass a node whose disk driver is missing
		// from the agent image as clean, with the last tenant's data on it.
		return "", nil, &disk.Error{Kind: disk.ErrMachine, Code: disk.CodeNoRootDisk,
			Msg: fmt.Sprintf("erase: found no disk to erase (of %d block devices listed, all removable); is the disk's driver in the agent image?", len(all))}
	}
	slices.SortFunc(disks, func(a, b disk.Disk) int { return strings.Compare(a.Name, b.Name) })

	start := time.Now()
	log := r.log().With("command", cmd.ID, "method", method)
	var erased []string
	var report []api.AgentErasedDisk
	var failed []error
	var before, verified int64 // bytes of the disks already dealt with; bytes read back
	sampled := 0
	for i, d := range disks {
		dev := r.devPath(d.Name)
		log.Info("erasing disk", "disk", dev, "size", size(d.Size))
		desc := fmt.Sprintf("%s %s", dev, size(d.Size))
		var e disk.Erased
		switch method {
		case EraseMetadata:
			e, err = disk.EraseMetadata(ctx, dev)
			e.How = EraseMetadata
			r.progress(cmd.ID, (i+1)*100/len(disks))
		case EraseFull:
			e, err = disk.EraseFull(ctx, dev, func(done, _ int64) {
				r.progress(cmd.ID, int((before+done)*100/total))
			})
			desc += ": " + e.How
		}
		before += d.Size
		if err != nil {
			if ctx.Err() != nil {
				return "", nil, err
			}
			// Go on with the other disks: the more is erased, the less
			// a retry has to do and the less a failure leaves behind.
			failed = append(failed, err)
			continue
		}
		erased = append(erased, desc)
		report = append(report, api.AgentErasedDisk{Path: dev, SizeBytes: d.Size, Method: e.How,
			VerifiedBytes: e.VerifiedBytes, SampledBlocks: e.SampledBlocks})
		verified += e.VerifiedBytes
		sampled += e.SampledBlocks
	}
	if len(failed) > 0 {
		return "", nil, &joined{
			msg:  fmt.Sprintf("erase (%s): %d of %d disks failed", method, len(failed), len(disks)),
			errs: failed,
		}
	}
	what, sep := "wiped partition tables and signatures of", ", "
	if method == EraseFull {
		what, sep = "erased every byte of", "; "
	}
	readBack := fmt.Sprintf("read back %s as zeros", size(verified))
	if sampled > 0 {
		readBack += fmt.Sprintf(", %d blocks sampled across the %s", sampled, plural(len(erased), "disk"))
	}
	return fmt.Sprintf("%s %d %s (%s) in %s; %s", what, len(erased), plural(len(erased), "disk"), strings.Join(erased, sep),
		time.Since(start).Round(100*time.Millisecond), readBack), report, nil
}

// joined is several failures as one: every message on one line, and
// errors.Is sees each (so disk.ErrMachine survives).
type joined struct {
	msg  string
	errs []error
}

func (j *joined) Error() string {
	s := make([]string, len(j.errs))
	for i, e := range j.errs {
		s[i] = e.Error()
	}
	return j.msg + ": " + strings.Join(s, "; ")
}

func (j *joined) Unwrap() []error { return j.errs }

// ParseHints reads a command's root device hints: size_gb ("100" or
// ">= 100"), serial, wwn, model, vendor and name. A key it does not know
// is the user's mistake, and refused: ignoring it could put the image on
// a disk the user meant to keep.
func ParseHints(m map[string]string) (disk.Hints, error) {
	var h disk.Hints
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "size_gb":
			s, err := disk.ParseSizeHint(v)
			if err != nil {
				return disk.Hints{}, err
			}
			h.Size = s
		case "serial":
			h.Serial = v
		case "wwn":
			h.WWN = v
		case "model":
			h.Model = v
		case "vendor":
			h.Vendor = v
		case "name":
			h.Name = v
		default:
			return disk.Hints{}, &disk.Error{Kind: disk.ErrInput, Code: disk.CodeNoRootDisk,
				Msg: fmt.Sprintf("unknown root device hint %q (known: %s)", k, strings.Join(api.RootDeviceHints(), ", "))}
		}
	}
	return h, nil
}

func (r *Runner) sysRoot() string {
	if r.SysRoot == "" {
		return "/sys"
	}
	return r.SysRoot
}

func (r *Runner) devPath(name string) string {
	if r.DevPath != nil {
		return r.DevPath(name)
	}
	return filepath.Join("/dev", name)
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// size is a byte count for people: "2.0 GiB".
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
