package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/diskfs/go-diskfs/partition/mbr"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent/disk"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// These tests run the real heartbeat loop against an httptest server
// standing for the controller, with images served over HTTP by another,
// on a fake machine: a sysfs tree listing disks that are regular files.

const mib = 1 << 20

// Every secret the tests hand the agent holds this word, so one search
// of the reports and logs finds any that leaked.
const secret = "SECRET"

// testDisk is a disk of the fake machine.
type testDisk struct {
	name      string
	sysSize   int64 // as sysfs reports it: what hints and the default rule see
	fileSize  int64 // the file standing for the device: what is written
	serial    string
	removable bool
}

type machine struct {
	sys   string
	files map[string]string // kernel name → file
}

func newMachine(t *testing.T, disks ...testDisk) *machine {
	t.Helper()
	m := &machine{sys: t.TempDir(), files: map[string]string{}}
	devDir := t.TempDir()
	write := func(p, v string) {
		full := filepath.Join(m.sys, "block", p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range disks {
		write(d.name+"/size", fmt.Sprint(d.sysSize/512))
		write(d.name+"/queue/rotational", "0")
		write(d.name+"/removable", map[bool]string{false: "0", true: "1"}[d.removable])
		write(d.name+"/device/serial", d.serial)
		f := filepath.Join(devDir, d.name)
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(f, d.fileSize); err != nil {
			t.Fatal(err)
		}
		m.files[d.name] = f
	}
	// A CD drive, which is never a target.
	write("sr0/size", "2048")
	write("sr0/removable", "1")
	return m
}

func (m *machine) runner(log *slog.Logger) *Runner {
	return &Runner{
		SysRoot: m.sys,
		DevPath: func(name string) string {
			if f, ok := m.files[name]; ok {
				return f
			}
			return filepath.Join(m.sys, "no-such-device", name)
		},
		Write: disk.Options{Retries: 2, Backoff: 10 * time.Millisecond, ChunkSize: mib},
		Log:   log,
	}
}

func (m *machine) read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(m.files[name])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fill writes b over the whole of a disk.
func (m *machine) fill(t *testing.T, name string, b byte) {
	t.Helper()
	fi, err := os.Stat(m.files[name])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.files[name], bytes.Repeat([]byte{b}, int(fi.Size())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testController is the controller's side of the heartbeat: it checks
// the token, decodes the body strictly as api.AgentHeartbeat (so the
// agent sends exactly the API's JSON), records it and answers with what
// reply says.
type testController struct {
	t     *testing.T
	token string
	srv   *httptest.Server

	mu    sync.Mutex
	beats []api.AgentHeartbeat
	reply func(hb api.AgentHeartbeat) api.AgentReply

	// configDrive is served at configDrivePath.
	configDrive     []byte
	configDrivePath string
	configDriveGets atomic.Int32
}

func newTestController(t *testing.T) *testController {
	c := &testController{
		t: t, token: "agent-token-" + secret,
		configDrivePath: "/v1/instances/i-1/config-drive/key-" + secret + "/config-2.iso",
		reply:           func(api.AgentHeartbeat) api.AgentReply { return api.AgentReply{} },
	}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == api.AgentHeartbeatPath:
			if r.Header.Get("Authorization") != "Bearer "+c.token {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			dec := json.NewDecoder(r.Body)
			dec.DisallowUnknownFields()
			var hb api.AgentHeartbeat
			if err := dec.Decode(&hb); err != nil {
				t.Errorf("heartbeat body: %v", err)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			c.mu.Lock()
			c.beats = append(c.beats, hb)
			rep := c.reply(hb)
			c.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(rep)
		case r.Method == http.MethodGet && r.URL.Path == c.configDrivePath:
			c.configDriveGets.Add(1)
			_, _ = w.Write(c.configDrive)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// since returns the heartbeats from index i on.
func (c *testController) since(i int) []api.AgentHeartbeat {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]api.AgentHeartbeat(nil), c.beats[i:]...)
}

// setReply changes the answer to later heartbeats.
func (c *testController) setReply(f func(hb api.AgentHeartbeat) api.AgentReply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reply = f
}

// handOut answers every heartbeat with cmd until the agent reports it
// finished, then with nothing: what the protocol asks of the controller.
func handOut(cmd api.AgentCommand) func(api.AgentHeartbeat) api.AgentReply {
	var finished bool
	return func(hb api.AgentHeartbeat) api.AgentReply {
		if s := hb.Command; s != nil && s.ID == cmd.ID && s.State != api.AgentCommandRunning {
			finished = true
		}
		if finished {
			return api.AgentReply{}
		}
		return api.AgentReply{Command: &cmd}
	}
}

// waitFor returns the first heartbeat from index from on that satisfies
// ok, and its index.
func (c *testController) waitFor(what string, from int, ok func(api.AgentHeartbeat) bool) (api.AgentHeartbeat, int) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for i := from; i < len(c.beats); i++ {
			if ok(c.beats[i]) {
				hb := c.beats[i]
				c.mu.Unlock()
				return hb, i
			}
		}
		c.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("no heartbeat %s; statuses seen: %s", what, c.statuses())
	return api.AgentHeartbeat{}, 0
}

// statuses lists the last heartbeats' command statuses.
func (c *testController) statuses() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s []string
	for _, hb := range c.beats[max(0, len(c.beats)-30):] {
		if hb.Command == nil {
			s = append(s, "-")
			continue
		}
		s = append(s, fmt.Sprintf("%s:%s:%d:%q", hb.Command.ID, hb.Command.State, hb.Command.Progress, hb.Command.Message))
	}
	return strings.Join(s, " ")
}

// noSecrets fails when a report or a log line holds a secret.
func (c *testController) noSecrets(logs *syncBuffer) {
	c.t.Helper()
	if s := c.statuses(); strings.Contains(s, secret) {
		c.t.Errorf("a command status shows a secret: %s", s)
	}
	if l := logs.String(); strings.Contains(l, secret) {
		c.t.Errorf("the log shows a secret:\n%s", l)
	}
}

func status(id string, state api.AgentCommandState) func(api.AgentHeartbeat) bool {
	return func(hb api.AgentHeartbeat) bool {
		return hb.Command != nil && hb.Command.ID == id && hb.Command.State == state
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runAgent runs the heartbeat loop with r until the test ends.
func runAgent(t *testing.T, c *testController, r *Runner, interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{
		Controller: NewHTTPController(c.srv.URL, c.token, nil),
		Collect:    func() api.AgentInventory { return api.AgentInventory{CPUs: 1} },
		Commands:   r,
		Version:    "test",
		Interval:   interval, AfterCommand: time.Millisecond,
		MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		Log: r.Log,
	}
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// imageServer serves one image behind basic auth, slowly if asked, and
// counts the downloads.
type imageServer struct {
	srv  *httptest.Server
	data []byte
	gets atomic.Int32
	// delay is slept per read of the image (io.Copy reads 32 KiB).
	delay time.Duration
}

const (
	imageUser = "deploy"
	imagePass = "pw-" + secret
)

func newImageServer(t *testing.T, data []byte, delay time.Duration) *imageServer {
	s := &imageServer{data: data, delay: delay}
	modTime := time.Now()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/images/disk.raw" {
			http.NotFound(w, r)
			return
		}
		if u, p, ok := r.BasicAuth(); !ok || u != imageUser || p != imagePass {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("X-Amz-Signature") != "sig-"+secret {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		s.gets.Add(1)
		http.ServeContent(w, r, "disk.raw", modTime, &slowReader{Reader: bytes.NewReader(s.data), delay: s.delay})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// url has credentials in both places a URL can carry them.
func (s *imageServer) url() string {
	return fmt.Sprintf("http://%s:%s@%s/images/disk.raw?X-Amz-Signature=sig-%s", imageUser, imagePass, strings.TrimPrefix(s.srv.URL, "http://"), secret)
}

type slowReader struct {
	*bytes.Reader
	delay time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	time.Sleep(r.delay)
	return r.Reader.Read(p)
}

func sha256Of(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// mbrImage is a disk image of size bytes with an MBR (written by
// go-diskfs) holding one Linux partition from 1 MiB to the end, full of
// random bytes.
func mbrImage(t *testing.T, size int64) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.raw")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	body := make([]byte, size-mib)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(body, mib); err != nil {
		t.Fatal(err)
	}
	tbl := &mbr.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, Partitions: []*mbr.Partition{
		{Type: mbr.Linux, Start: mib / 512, Size: uint32((size - mib) / 512)},
	}}
	if err := tbl.Write(f, size); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testConfigDrive(t *testing.T) []byte {
	var b bytes.Buffer
	if err := configdrive.Build(&b, configdrive.Drive{UUID: "8f1d2b4e-0000-4000-8000-000000000001", Name: "web-1", Hostname: "web-1", UserData: []byte("#cloud-config\n")}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testLogger() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// TestWriteImageCommand: the disk the hints name gets the image and a
// config drive partition, the other disk is untouched; the heartbeats
// show progress, then the outcome; the command handed out again, while
// running and after it finished, is run once.
func TestWriteImageCommand(t *testing.T) {
	m := newMachine(t,
		testDisk{name: "vda", sysSize: 8 << 30, fileSize: 16 * mib, serial: "disk-a"},
		testDisk{name: "vdb", sysSize: 16 << 30, fileSize: 24 * mib, serial: "disk-b"},
	)
	img := mbrImage(t, 4*mib)
	// ~128 reads of 32 KiB at 3 ms: long enough for heartbeats every
	// 10 ms to see it running and to hand it out again meanwhile.
	is := newImageServer(t, img, 3*time.Millisecond)
	c := newTestController(t)
	c.configDrive = testConfigDrive(t)
	cmd := api.AgentCommand{
		ID: "cmd-1", Kind: api.AgentWriteImage,
		Image:           &api.Image{URL: is.url(), Checksum: sha256Of(img)},
		RootDeviceHints: map[string]string{"serial": "disk-b", "size_gb": ">= 10"},
		ConfigDriveURL:  c.srv.URL + c.configDrivePath,
	}
	// Hand it out on every heartbeat until the outcome was reported
	// three times, then stop.
	var outcomes int
	c.setReply(func(hb api.AgentHeartbeat) api.AgentReply {
		if hb.Command != nil && hb.Command.State == api.AgentCommandSucceeded {
			outcomes++
		}
		if outcomes >= 3 {
			return api.AgentReply{}
		}
		return api.AgentReply{Command: &cmd}
	})
	log, logs := testLogger()
	runAgent(t, c, m.runner(log), 10*time.Millisecond)

	c.waitFor("running with progress", 0, func(hb api.AgentHeartbeat) bool {
		return hb.Command != nil && hb.Command.State == api.AgentCommandRunning && hb.Command.Progress > 0 && hb.Command.Progress < 100
	})
	hb, i := c.waitFor("succeeded", 0, status("cmd-1", api.AgentCommandSucceeded))
	st := hb.Command
	t.Logf("reported: %s", st.Message)
	if st.Disk != m.files["vdb"] || st.Input {
		t.Errorf("status %+v: want disk %s", st, m.files["vdb"])
	}
	for _, want := range []string{"wrote 4.0 MiB raw image to " + m.files["vdb"], "sha256 verified", "config drive", "config-2"} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("message %q does not say %q", st.Message, want)
		}
	}
	// Once the controller stops handing it out, the agent stops reporting.
	_, i = c.waitFor("without a command after the outcome was taken", i, func(hb api.AgentHeartbeat) bool { return hb.Command == nil })
	time.Sleep(50 * time.Millisecond) // a few more heartbeats
	for _, hb := range c.since(i) {
		if hb.Command != nil {
			t.Fatalf("a heartbeat after the report reports %+v", hb.Command)
		}
	}
	// Handed out again much later: the outcome again, no second write.
	c.setReply(func(api.AgentHeartbeat) api.AgentReply { return api.AgentReply{Command: &cmd} })
	hb, _ = c.waitFor("re-reporting the outcome", i, status("cmd-1", api.AgentCommandSucceeded))
	if hb.Command.Message != st.Message {
		t.Errorf("outcome reported again as %q, was %q", hb.Command.Message, st.Message)
	}
	c.setReply(func(api.AgentHeartbeat) api.AgentReply { return api.AgentReply{} })
	if n := is.gets.Load(); n != 1 {
		t.Errorf("image downloaded %d times, want once", n)
	}
	if n := c.configDriveGets.Load(); n != 1 {
		t.Errorf("config drive downloaded %d times, want once", n)
	}

	got := m.read(t, "vdb")
	// The image as served, except the MBR's second entry: the config drive.
	if !bytes.Equal(got[:446+16], img[:446+16]) || !bytes.Equal(got[512:len(img)], img[512:]) {
		t.Error("vdb does not hold the image")
	}
	tbl, err := mbr.Read(fileOf(t, m.files["vdb"]), 512, 512)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Partitions) < 2 || tbl.Partitions[1].Type != mbr.Linux {
		t.Fatalf("vdb's partitions %+v: no config drive", tbl.Partitions)
	}
	p := tbl.Partitions[1]
	start := int64(p.Start) * 512
	if start < int64(len(img)) || !bytes.Equal(got[start:start+int64(len(c.configDrive))], c.configDrive) {
		t.Errorf("config drive partition at %d does not hold the ISO", start)
	}
	if a := m.read(t, "vda"); !bytes.Equal(a, make([]byte, len(a))) {
		t.Error("vda was written to")
	}
	c.noSecrets(logs)
}

func fileOf(t *testing.T, p string) *os.File {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// TestWriteImageFailures: each failure is reported with whose it is, and
// a disk whose write failed is left without signatures.
func TestWriteImageFailures(t *testing.T) {
	img := mbrImage(t, 2*mib)
	for _, tc := range []struct {
		name     string
		disks    []testDisk
		cmd      func(c *testController, is *imageServer) api.AgentCommand
		input    bool
		disk     string // the disk reported, "" for none
		contains []string
	}{{
		name:  "checksum mismatch",
		disks: []testDisk{{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib}, {name: "vdb", sysSize: 16 << 30, fileSize: 8 * mib}},
		cmd: func(_ *testController, is *imageServer) api.AgentCommand {
			return api.AgentCommand{Image: &api.Image{URL: is.url(), Checksum: sha256Of([]byte("another image"))}}
		},
		// No hints: the smallest disk of at least 4 GiB.
		input: true, disk: "vda", contains: []string{"checksum mismatch", "expected sha256:"},
	}, {
		name:  "no disk matches the hints",
		disks: []testDisk{{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib, serial: "disk-a"}},
		cmd: func(_ *testController, is *imageServer) api.AgentCommand {
			return api.AgentCommand{Image: &api.Image{URL: is.url()}, RootDeviceHints: map[string]string{"serial": "disk-z"}}
		},
		input: true, contains: []string{"no disk matches the root device hints", `serial "disk-a", not "disk-z"`},
	}, {
		name:  "unknown hint",
		disks: []testDisk{{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib}},
		cmd: func(_ *testController, is *imageServer) api.AgentCommand {
			return api.AgentCommand{Image: &api.Image{URL: is.url()}, RootDeviceHints: map[string]string{"rotational": "0"}}
		},
		input: true, contains: []string{`unknown root device hint "rotational"`},
	}, {
		name:  "image not found",
		disks: []testDisk{{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib}},
		cmd: func(_ *testController, is *imageServer) api.AgentCommand {
			return api.AgentCommand{Image: &api.Image{URL: strings.Replace(is.url(), "/images/disk.raw", "/images/gone.raw", 1)}}
		},
		input: true, disk: "vda", contains: []string{"gone.raw", "X-Amz-Signature=REDACTED"},
	}, {
		name:  "no usable disk is the machine's",
		disks: []testDisk{{name: "sdc", sysSize: 8 << 30, fileSize: 8 * mib, removable: true}},
		cmd: func(_ *testController, is *imageServer) api.AgentCommand {
			return api.AgentCommand{Image: &api.Image{URL: is.url()}}
		},
		input: false, contains: []string{"no disk of at least 4.0 GiB"},
	}, {
		name:  "config drive not served is not the user's",
		disks: []testDisk{{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib}},
		cmd: func(c *testController, is *imageServer) api.AgentCommand {
			return api.AgentCommand{Image: &api.Image{URL: is.url(), Checksum: sha256Of(img)}, ConfigDriveURL: c.srv.URL + "/v1/instances/i-1/config-drive/key-" + secret + "-wrong/config-2.iso"}
		},
		input: false, disk: "vda", contains: []string{"config drive download: HTTP 404"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, tc.disks...)
			for _, d := range tc.disks {
				m.fill(t, d.name, 0xab) // a previous tenant's data
			}
			is := newImageServer(t, img, 0)
			c := newTestController(t)
			cmd := tc.cmd(c, is)
			cmd.ID, cmd.Kind = "cmd-"+tc.name, api.AgentWriteImage
			c.setReply(handOut(cmd))
			log, logs := testLogger()
			runAgent(t, c, m.runner(log), 10*time.Millisecond)

			hb, _ := c.waitFor("failed", 0, status(cmd.ID, api.AgentCommandFailed))
			st := hb.Command
			t.Logf("reported: %s", st.Message)
			if st.Input != tc.input {
				t.Errorf("input = %t, want %t (message %q)", st.Input, tc.input, st.Message)
			}
			for _, want := range tc.contains {
				if !strings.Contains(st.Message, want) {
					t.Errorf("message %q does not say %q", st.Message, want)
				}
			}
			if tc.disk != "" {
				if st.Disk != m.files[tc.disk] {
					t.Errorf("disk %q, want %q", st.Disk, m.files[tc.disk])
				}
				// Wiped after the failure (whether or not any of the
				// image got there): nothing to boot by mistake.
				if b := m.read(t, tc.disk); !bytes.Equal(b[:len(img)], make([]byte, len(img))) {
					t.Error("the failed write left data at the start of the disk")
				}
			} else {
				for _, d := range tc.disks {
					if b := m.read(t, d.name); !bytes.Equal(b, bytes.Repeat([]byte{0xab}, len(b))) {
						t.Errorf("%s was written to though the command failed before choosing it", d.name)
					}
				}
			}
			c.noSecrets(logs)
		})
	}
}

// TestEraseCommands: metadata wipes both ends of every non-removable
// disk and keeps the middle, full zeroes all of it, a removable disk is
// left alone. The heartbeat interval is an hour: the outcome and the
// next command get through only because a finished command wakes the
// loop and the report of an outcome is followed by a quick heartbeat.
func TestEraseCommands(t *testing.T) {
	const size = 32 * mib
	m := newMachine(t,
		testDisk{name: "vda", sysSize: size, fileSize: size},
		testDisk{name: "vdb", sysSize: size, fileSize: size},
		testDisk{name: "sdc", sysSize: size, fileSize: size, removable: true},
	)
	for _, n := range []string{"vda", "vdb", "sdc"} {
		m.fill(t, n, 0xab)
	}
	c := newTestController(t)
	meta := api.AgentCommand{ID: "erase-1", Kind: api.AgentErase, Erase: "metadata"}
	full := api.AgentCommand{ID: "erase-2", Kind: api.AgentErase, Erase: "full"}
	// erase-1 until it is reported, then erase-2 until it is, then none.
	// Like a controller that works out the next step after the report,
	// the reply to a report hands out nothing: only the quick heartbeat
	// after a report brings the next command. The disks after erase-1
	// are read when its outcome arrives, before erase-2 can run.
	next := []api.AgentCommand{meta, full}
	afterMeta := map[string][]byte{}
	c.setReply(func(hb api.AgentHeartbeat) api.AgentReply {
		if s := hb.Command; s != nil && len(next) > 0 && s.ID == next[0].ID && s.State != api.AgentCommandRunning {
			if s.ID == meta.ID {
				for _, n := range []string{"vda", "vdb"} {
					afterMeta[n] = m.read(t, n)
				}
			}
			next = next[1:]
			return api.AgentReply{}
		}
		if len(next) == 0 {
			return api.AgentReply{}
		}
		return api.AgentReply{Command: &next[0]}
	})
	log, logs := testLogger()
	runAgent(t, c, m.runner(log), time.Hour)

	hb, i := c.waitFor("erase-1 succeeded", 0, status(meta.ID, api.AgentCommandSucceeded))
	if want := "wiped partition tables and signatures of 2 disks (" + m.files["vda"] + " 32.0 MiB, " + m.files["vdb"] + " 32.0 MiB)"; !strings.HasPrefix(hb.Command.Message, want) {
		t.Errorf("message %q, want it to start with %q", hb.Command.Message, want)
	}
	// What was read back, per disk: both 8 MiB ends (a 32 MiB disk
	// without partitions), nothing sampled.
	wantErased := func(method string, verified int64, sampled int) []api.AgentErasedDisk {
		var out []api.AgentErasedDisk
		for _, n := range []string{"vda", "vdb"} {
			out = append(out, api.AgentErasedDisk{Path: m.files[n], SizeBytes: size, Method: method, VerifiedBytes: verified, SampledBlocks: sampled})
		}
		return out
	}
	if want := wantErased("metadata", 2*disk.MetadataRegion, 0); !slices.Equal(hb.Command.Erased, want) {
		t.Errorf("metadata erase reported %+v, want %+v", hb.Command.Erased, want)
	}
	if !strings.HasSuffix(hb.Command.Message, "; read back 32.0 MiB as zeros") {
		t.Errorf("message %q does not say what was read back", hb.Command.Message)
	}
	ab := bytes.Repeat([]byte{0xab}, size)
	zero := make([]byte, size)
	c.mu.Lock()
	for _, n := range []string{"vda", "vdb"} {
		b := afterMeta[n]
		end := size - disk.MetadataRegion
		if len(b) != size || !bytes.Equal(b[:disk.MetadataRegion], zero[:disk.MetadataRegion]) || !bytes.Equal(b[end:], zero[end:]) {
			t.Errorf("%s: metadata regions not zero", n)
		} else if !bytes.Equal(b[disk.MetadataRegion:end], ab[disk.MetadataRegion:end]) {
			t.Errorf("%s: the middle was touched by a metadata erase", n)
		}
	}
	c.mu.Unlock()

	hb, _ = c.waitFor("erase-2 succeeded", i, status(full.ID, api.AgentCommandSucceeded))
	if want := "erased every byte of 2 disks (" + m.files["vda"] + " 32.0 MiB: overwritten with zeros; " + m.files["vdb"] + " 32.0 MiB: overwritten with zeros)"; !strings.HasPrefix(hb.Command.Message, want) {
		t.Errorf("message %q, want it to start with %q", hb.Command.Message, want)
	}
	// Both ends, then the samples across the disk.
	if want := wantErased(disk.ErasedByOverwrite, 2*disk.MetadataRegion+disk.Samples*disk.SampleBlock, disk.Samples); !slices.Equal(hb.Command.Erased, want) {
		t.Errorf("full erase reported %+v, want %+v", hb.Command.Erased, want)
	}
	if !strings.Contains(hb.Command.Message, "; read back ") || !strings.HasSuffix(hb.Command.Message, " as zeros, 256 blocks sampled across the disks") {
		t.Errorf("message %q does not say what was read back", hb.Command.Message)
	}
	for _, n := range []string{"vda", "vdb"} {
		if !bytes.Equal(m.read(t, n), zero) {
			t.Errorf("%s not all zeros after a full erase", n)
		}
	}
	if !bytes.Equal(m.read(t, "sdc"), ab) {
		t.Error("the removable disk was erased")
	}
	c.noSecrets(logs)
}

// TestOneCommandAtATime: a second command handed out while one runs
// waits; it starts once the first one's outcome is reported.
func TestOneCommandAtATime(t *testing.T) {
	m := newMachine(t,
		testDisk{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib},
		testDisk{name: "vdb", sysSize: 16 << 30, fileSize: 8 * mib},
	)
	imgA, imgB := mbrImage(t, 2*mib), mbrImage(t, 2*mib)
	isA, isB := newImageServer(t, imgA, 3*time.Millisecond), newImageServer(t, imgB, 0)
	c := newTestController(t)
	a := api.AgentCommand{ID: "a", Kind: api.AgentWriteImage, Image: &api.Image{URL: isA.url(), Checksum: sha256Of(imgA)}, RootDeviceHints: map[string]string{"name": "vda"}}
	b := api.AgentCommand{ID: "b", Kind: api.AgentWriteImage, Image: &api.Image{URL: isB.url(), Checksum: sha256Of(imgB)}, RootDeviceHints: map[string]string{"name": "/dev/vdb"}}
	// Alternate a and b while a runs, b alone once a is reported
	// finished, nothing once b is.
	var n int
	var aDone, bDone bool
	c.setReply(func(hb api.AgentHeartbeat) api.AgentReply {
		n++
		if s := hb.Command; s != nil && s.State != api.AgentCommandRunning {
			aDone, bDone = aDone || s.ID == "a", bDone || s.ID == "b"
		}
		switch {
		case bDone:
			return api.AgentReply{}
		case aDone || n%2 == 0:
			return api.AgentReply{Command: &b}
		}
		return api.AgentReply{Command: &a}
	})
	log, logs := testLogger()
	runAgent(t, c, m.runner(log), 10*time.Millisecond)

	_, ia := c.waitFor("a succeeded", 0, status("a", api.AgentCommandSucceeded))
	_, ib := c.waitFor("b succeeded", 0, status("b", api.AgentCommandSucceeded))
	if ib < ia {
		t.Fatalf("b finished (heartbeat %d) before a (heartbeat %d)", ib, ia)
	}
	for _, hb := range c.since(0)[:ia] {
		if hb.Command != nil && hb.Command.ID != "a" {
			t.Errorf("while a ran, a heartbeat reported %+v", hb.Command)
		}
	}
	if isA.gets.Load() != 1 || isB.gets.Load() != 1 {
		t.Errorf("downloads: a %d, b %d; want one each", isA.gets.Load(), isB.gets.Load())
	}
	if got := m.read(t, "vda"); !bytes.Equal(got[:len(imgA)], imgA) {
		t.Error("vda does not hold image a")
	}
	if got := m.read(t, "vdb"); !bytes.Equal(got[:len(imgB)], imgB) {
		t.Error("vdb does not hold image b")
	}
	if !strings.Contains(logs.String(), "busy with another command") {
		t.Error("the refusal of b while a ran is not logged")
	}
	c.noSecrets(logs)
}

// TestCommandPanicIsAFailure: a command that panics is reported failed;
// the agent (PID 1) lives on.
func TestCommandPanicIsAFailure(t *testing.T) {
	m := newMachine(t, testDisk{name: "vda", sysSize: 8 << 30, fileSize: 8 * mib})
	c := newTestController(t)
	cmd := api.AgentCommand{ID: "p", Kind: api.AgentErase, Erase: "metadata"}
	c.setReply(handOut(cmd))
	log, _ := testLogger()
	r := m.runner(log)
	r.DevPath = func(string) string { panic("device table corrupt") }
	runAgent(t, c, r, 10*time.Millisecond)
	hb, i := c.waitFor("failed", 0, status("p", api.AgentCommandFailed))
	if !strings.Contains(hb.Command.Message, "device table corrupt") || hb.Command.Input {
		t.Errorf("status %+v", hb.Command)
	}
	c.waitFor("after the panic", i, func(hb api.AgentHeartbeat) bool { return hb.Command == nil })
}

func TestEraseWithoutDisksFails(t *testing.T) {
	m := newMachine(t, testDisk{name: "sdc", sysSize: 8 << 30, fileSize: mib, removable: true})
	c := newTestController(t)
	cmd := api.AgentCommand{ID: "e", Kind: api.AgentErase}
	c.setReply(handOut(cmd))
	log, _ := testLogger()
	runAgent(t, c, m.runner(log), 10*time.Millisecond)
	hb, _ := c.waitFor("failed", 0, status("e", api.AgentCommandFailed))
	if !strings.Contains(hb.Command.Message, "found no disk to erase") || hb.Command.Input {
		t.Errorf("status %+v", hb.Command)
	}
}

func TestParseHints(t *testing.T) {
	h, err := ParseHints(map[string]string{"size_gb": ">= 100", "serial": "S1", "wwn": "0x5000", "model": "M", "vendor": "V", "name": "/dev/sda"})
	if err != nil {
		t.Fatal(err)
	}
	want := disk.Hints{Size: disk.SizeHint{GiB: 100, AtLeast: true}, Serial: "S1", WWN: "0x5000", Model: "M", Vendor: "V", Name: "/dev/sda"}
	if h != want {
		t.Fatalf("hints %+v, want %+v", h, want)
	}
	// Every key the API accepts, the agent knows.
	for _, k := range api.RootDeviceHints() {
		v := "x"
		if k == "size_gb" {
			v = "1"
		}
		if _, err := ParseHints(map[string]string{k: v}); err != nil {
			t.Errorf("API hint %s: %v", k, err)
		}
	}
	for _, bad := range []map[string]string{{"size_gb": "lots"}, {"Serial": "x"}} {
		if _, err := ParseHints(bad); err == nil || disk.CodeOf(err) != disk.CodeNoRootDisk {
			t.Errorf("ParseHints(%v) = %v, want a no_root_disk input error", bad, err)
		}
	}
}

// The controller checks erase reports against the API's region; the
// erase zeroes the disk's.
func TestEraseRegionIsTheAPIs(t *testing.T) {
	if api.AgentEraseRegion != disk.MetadataRegion {
		t.Fatalf("api.AgentEraseRegion %d, disk.MetadataRegion %d", api.AgentEraseRegion, disk.MetadataRegion)
	}
}
