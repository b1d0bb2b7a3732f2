package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// BenchmarkIronic runs OpenStack Ironic (Debian's ironic-api and
// ironic-conductor, standalone on loopback: SQLite, noauth, json-rpc,
// fake-hardware; scripts/ironic starts and stops it) beside the real
// `controller serve` process on SQLite (and on PostgreSQL with
// BAREMETAL_TEST_DATABASE_URL), drives each with the same client and
// prints, side by side: the enroll rate (POST /v1/nodes, 201s per
// second, 8 clients) with its latencies, the latency of one
// GET /v1/nodes?limit=1000, the time to list every node page by page,
// the server's CPU time per enroll and per list (all its processes: less
// at the mercy of what else the machine runs than the rates), each
// side's RSS, and our figures over Ironic's. Our CPU per enroll includes
// the verify jobs that run meanwhile.
//
//	make bench-ironic
//	go test -run '^$' -bench Ironic -benchtime 1x -timeout 60m ./controller
//
// Ironic's side skips when ironic-api is not installed (apt-get install
// ironic-api ironic-conductor) or its port (6385) is taken. Our nodes
// have simulated Redfish BMCs in this process, one each: an enroll asks
// its BMC which system it is and queues a verify job that reads it while
// the enroll goes on (Ironic's fake-hardware reads nothing); the list is
// read once every node is available, full rows, right after a power sync
// pass. BENCH_NODES (default
// 1000) sets the fleet size, BENCH_LISTS (default 20) how many times the
// page is read, BENCH_SYSTEMS_PER_BMC (default 1) how many nodes share
// a simulated BMC (10,000 BMCs of one system each need 20,000 file
// descriptors in this process).
func BenchmarkIronic(b *testing.B) {
	nodes := 1000
	if v, err := strconv.Atoi(os.Getenv("BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	lists := 20
	if v, err := strconv.Atoi(os.Getenv("BENCH_LISTS")); err == nil && v > 0 {
		lists = v
	}
	results := map[string]*sideResult{}
	b.Run(fmt.Sprintf("ironic/nodes=%d", nodes), func(b *testing.B) {
		for range b.N {
			results["ironic"] = benchIronicSide(b, nodes, lists)
		}
	})
	for _, db := range []string{"sqlite", "postgres"} {
		b.Run(fmt.Sprintf("%s/nodes=%d", db, nodes), func(b *testing.B) {
			if db == "postgres" && os.Getenv(storetest.DatabaseURLEnv) == "" {
				b.Skipf("%s is not set", storetest.DatabaseURLEnv)
			}
			for range b.N {
				results[db] = benchOurSide(b, db, nodes, lists)
			}
		})
	}
	printSideBySide(os.Stdout, nodes, lists, results)
}

// sideResult is what one side measured.
type sideResult struct {
	name      string
	enroll    time.Duration // all POSTs, 8 clients
	enrollLat []time.Duration
	list      []time.Duration // GET ?limit=1000, one after another
	listAll   time.Duration   // every page, following the cursor
	pages     int
	rss, peak int64 // bytes: now (after the lists) and the most it held
	// enrollCPU and listCPU are the server's CPU time (user + system, all
	// its processes) during the enroll and during the timed lists.
	enrollCPU, listCPU time.Duration
	// harnessCPU is this process's CPU time during the enroll: the
	// clients, and on our side the simulated BMCs, which share the
	// machine's cores with the server (real BMCs are machines of their
	// own).
	harnessCPU time.Duration
	// bmcRequests is how many requests the simulated BMCs answered per
	// node, from the first enroll until every node was available (ours
	// only: Ironic's fake-hardware has no BMC).
	bmcRequests  float64
	syncPass     float64
	load         string
	nodes        int
	listedNodes  int // on the one page
	listAllNodes int // on every page
}

const benchClients = 8

// benchOurSide enrolls, waits until every node is available, then lists.
func benchOurSide(b *testing.B, db string, nodes, lists int) *sideResult {
	// Each node its own simulated BMC, on its own address, as servers
	// have (BENCH_SYSTEMS_PER_BMC puts several behind one, as a chassis
	// manager does: then each enroll reads that BMC's whole collection).
	per := 1
	if v, err := strconv.Atoi(os.Getenv("BENCH_SYSTEMS_PER_BMC")); err == nil && v > 0 {
		per = v
	}
	addr, sys := make([]string, 0, nodes), make([]string, 0, nodes)
	var fleets []*sim.Fleet
	for len(addr) < nodes {
		fleet, err := sim.Start(sim.Options{Systems: min(per, nodes-len(addr))})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = fleet.Close() })
		fleets = append(fleets, fleet)
		for _, id := range fleet.SystemIDs() {
			addr, sys = append(addr, fleet.URL()), append(sys, id)
		}
	}
	dbURL := ""
	if db == "postgres" {
		dbURL = storetest.PostgresURL(b)
	}
	p := startServe(b, b.TempDir(), dbURL)
	// The passes River's leader runs at its election (power sync, health,
	// settings: a read of every node's BMC each), on the empty fleet:
	// elected after the enroll, they ran amid it and the lists (the
	// health pass alone, several requests per node, doubled the lists'
	// CPU).
	if p.passes(b).count == 0 {
		p.waitPasses(b, 1, time.Minute)
	}
	s := &sideResult{name: "ours (" + db + ")", nodes: nodes}
	c := benchClient()
	auth := http.Header{"Authorization": {"Bearer " + testToken}}
	pids := []int{p.cmd.Process.Pid}
	bmcRequests := func() (n int64) {
		for _, f := range fleets {
			n += f.TotalRequests()
		}
		return n
	}
	req0 := bmcRequests()
	self0 := procCPU([]int{os.Getpid()})
	cpu0 := procCPU(pids)
	s.enroll, s.enrollLat = enrollAll(b, nodes, func(i int) error {
		body := fmt.Sprintf(`{"name":"bench-%05d","driver":"redfish","resource_class":"baremetal",
			"bmc":{"address":%q,"username":"admin","password":"password","system_id":%q}}`, i, addr[i], sys[i])
		return benchDo(c, http.MethodPost, p.url+"/v1/nodes", auth, body, http.StatusCreated, nil)
	})
	s.enrollCPU = procCPU(pids) - cpu0
	s.harnessCPU = procCPU([]int{os.Getpid()}) - self0
	p.waitMetric(b, `baremetal_nodes{provision_state="available"}`, float64(nodes), 10*time.Minute)
	s.bmcRequests = float64(bmcRequests()-req0) / float64(nodes)
	// The next whole power sync pass, as the controller times it; the
	// lists right after it, so that none meets a pass (every 20 s, a read
	// of every node's BMC: it doubled the CPU of the lists it met).
	s.syncPass = p.waitPasses(b, 1, 5*time.Minute)
	waitIdle(pids) // the pass's reads that outlived it (handed to its late writer)
	cpu0 = procCPU(pids)
	s.list, s.listedNodes = listTimes(b, c, p.url+"/v1/nodes?limit=1000", auth, lists, "items")
	s.listCPU = procCPU(pids) - cpu0
	s.listAll, s.pages, s.listAllNodes = listAll(b, c, p.url, "/v1/nodes?limit=1000", auth, func(body []byte) (int, string) {
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			b.Fatal(err)
		}
		if page.NextCursor == "" {
			return len(page.Items), ""
		}
		return len(page.Items), "/v1/nodes?limit=1000&cursor=" + page.NextCursor
	})
	s.rss, s.peak = procRSS(p.cmd.Process.Pid)
	s.load = loadavg()
	reportSide(b, s)
	return s
}

// benchIronicSide starts Ironic in a fresh state directory, enrolls
// fake-hardware nodes and lists them.
func benchIronicSide(b *testing.B, nodes, lists int) *sideResult {
	if _, err := exec.LookPath("ironic-api"); err != nil {
		b.Skip("ironic-api is not installed (apt-get install -y ironic-api ironic-conductor)")
	}
	if conn, err := net.DialTimeout("tcp", ironicAddr, time.Second); err == nil {
		conn.Close()
		b.Skipf("%s is taken (another Ironic running?)", ironicAddr)
	}
	scripts, err := filepath.Abs("../scripts/ironic")
	if err != nil {
		b.Fatal(err)
	}
	rig := b.TempDir()
	env := append(os.Environ(), "IRONIC_RIG="+rig, "NBMC=0")
	start := exec.Command(filepath.Join(scripts, "start.sh"))
	start.Env = env
	b.Cleanup(func() {
		stop := exec.Command(filepath.Join(scripts, "stop.sh"))
		stop.Env = env
		if out, err := stop.CombinedOutput(); err != nil {
			b.Logf("stop.sh: %v\n%s", err, out)
		}
	})
	if out, err := start.CombinedOutput(); err != nil {
		b.Fatalf("start.sh: %v\n%s", err, out)
	}
	pids := func() []int {
		var out []int
		for _, f := range []string{"api.pid", "conductor.pid"} {
			raw, err := os.ReadFile(filepath.Join(rig, "run", f))
			if err != nil {
				b.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, pid)
		}
		return out
	}()
	url := "http://" + ironicAddr
	hdr := http.Header{"X-OpenStack-Ironic-API-Version": {"latest"}}
	s := &sideResult{name: "Ironic", nodes: nodes}
	c := benchClient()
	var tree []int
	for _, pid := range pids {
		tree = append(tree, processTree(pid)...)
	}
	self0 := procCPU([]int{os.Getpid()})
	cpu0 := procCPU(tree)
	s.enroll, s.enrollLat = enrollAll(b, nodes, func(i int) error {
		return benchDo(c, http.MethodPost, url+"/v1/nodes", hdr,
			fmt.Sprintf(`{"name":"bench-%05d","driver":"fake-hardware"}`, i), http.StatusCreated, nil)
	})
	s.enrollCPU = procCPU(tree) - cpu0
	s.harnessCPU = procCPU([]int{os.Getpid()}) - self0
	cpu0 = procCPU(tree)
	s.list, s.listedNodes = listTimes(b, c, url+"/v1/nodes?limit=1000", hdr, lists, "nodes")
	s.listCPU = procCPU(tree) - cpu0
	s.listAll, s.pages, s.listAllNodes = listAll(b, c, url, "/v1/nodes?limit=1000", hdr, func(body []byte) (int, string) {
		var page struct {
			Nodes []json.RawMessage `json:"nodes"`
			Next  string            `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			b.Fatal(err)
		}
		if page.Next == "" {
			return len(page.Nodes), ""
		}
		return len(page.Nodes), strings.TrimPrefix(page.Next, url)
	})
	for _, p := range tree {
		rss, peak := procRSS(p)
		s.rss += rss
		s.peak += peak
	}
	s.load = loadavg()
	reportSide(b, s)
	return s
}

const ironicAddr = "127.0.0.1:6385"

func benchClient() *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: benchClients}}
}

// benchDo sends one request and wants the status; out, when not nil,
// receives the body.
func benchDo(c *http.Client, method, url string, hdr http.Header, body string, want int, out *[]byte) error {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	msg, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %d, want %d: %.500s", method, url, res.StatusCode, want, msg)
	}
	if out != nil {
		*out = msg
	}
	return nil
}

// enrollAll runs post(i) for every node from benchClients clients and
// returns the wall time and each request's latency.
func enrollAll(b *testing.B, nodes int, post func(i int) error) (time.Duration, []time.Duration) {
	lat := make([]time.Duration, nodes)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, benchClients)
	start := time.Now()
	for range benchClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= nodes {
					return
				}
				t := time.Now()
				if err := post(i); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return took, lat
}

// listTimes reads the page n times, one after another (two reads first
// that are not timed), and returns the times and how many nodes it held.
func listTimes(b *testing.B, c *http.Client, url string, hdr http.Header, n int, key string) ([]time.Duration, int) {
	var body []byte
	var out []time.Duration
	for i := range n + 2 {
		t := time.Now()
		if err := benchDo(c, http.MethodGet, url, hdr, "", http.StatusOK, &body); err != nil {
			b.Fatal(err)
		}
		if i >= 2 {
			out = append(out, time.Since(t))
		}
	}
	var page map[string]json.RawMessage
	var items []json.RawMessage
	if err := json.Unmarshal(body, &page); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(page[key], &items); err != nil {
		b.Fatal(err)
	}
	return out, len(items)
}

// listAll reads every page from first on, as next says, and wants every
// node.
func listAll(b *testing.B, c *http.Client, base, first string, hdr http.Header, next func([]byte) (int, string)) (took time.Duration, pages, total int) {
	start := time.Now()
	for path := first; path != ""; {
		var body []byte
		if err := benchDo(c, http.MethodGet, base+path, hdr, "", http.StatusOK, &body); err != nil {
			b.Fatal(err)
		}
		n, p := next(body)
		pages++
		total += n
		path = p
	}
	return time.Since(start), pages, total
}

// procRSS reads a process's resident set now and at its peak (bytes).
func procRSS(pid int) (rss, peak int64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

// procCPU sums the CPU time (user and system) the processes have used.
func procCPU(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 12 { // state ppid ... utime (14th field) stime (15th)
			u, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + st
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// processTree lists pid and its descendants (Ironic's API forks its
// workers).
func processTree(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[p] = pp
		}
	}
	out := []int{pid}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if slices.Contains(out, pp) && !slices.Contains(out, p) {
				out = append(out, p)
				changed = true
			}
		}
	}
	return out
}

// waitIdle waits, at most 10 s, until the processes have used under 5%
// of a CPU for 400 ms.
func waitIdle(pids []int) {
	const step = 200 * time.Millisecond
	quiet := 0
	for deadline := time.Now().Add(10 * time.Second); quiet < 2 && time.Now().Before(deadline); {
		c0 := procCPU(pids)
		time.Sleep(step)
		if procCPU(pids)-c0 < step/20 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:3], " ")
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 50) }

func quantile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *sideResult) enrollRate() float64 { return float64(s.nodes) / s.enroll.Seconds() }

func reportSide(b *testing.B, s *sideResult) {
	if s.listAllNodes != s.nodes || s.listedNodes != min(s.nodes, 1000) {
		b.Fatalf("%s listed %d nodes in %d pages (one page: %d), want %d", s.name, s.listAllNodes, s.pages, s.listedNodes, s.nodes)
	}
	b.ReportMetric(s.enrollRate(), "enrolls/s")
	b.ReportMetric(ms(median(s.list)), "list-ms")
	b.ReportMetric(float64(s.rss)/(1<<20), "rss-MiB")
}

// printSideBySide prints what each side measured and our figures over
// Ironic's.
func printSideBySide(w io.Writer, nodes, lists int, rs map[string]*sideResult) {
	order := []string{"ironic", "sqlite", "postgres"}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\n%d nodes, %d clients enrolling; GET /v1/nodes?limit=1000 read %d times, one at a time\n", nodes, benchClients, lists)
	fmt.Fprintln(tw, "side\tenroll/s\tenroll p50 ms\tp99 ms\tCPU ms/enroll\tharness CPU ms/enroll\tBMC req/enroll\tlist p50 ms\tp90 ms\tCPU ms/list\tlist all s (pages)\tRSS MiB\tpeak MiB\tsync pass s\tload avg\t")
	for _, k := range order {
		s := rs[k]
		if s == nil {
			continue
		}
		sync, reqs := "-", "-"
		if s.bmcRequests > 0 {
			reqs = fmt.Sprintf("%.1f", s.bmcRequests)
		}
		if s.syncPass > 0 {
			sync = fmt.Sprintf("%.2f", s.syncPass)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.2f\t%.2f\t%s\t%.1f\t%.1f\t%.1f\t%.2f (%d)\t%.0f\t%.0f\t%s\t%s\t\n", s.name, s.enrollRate(),
			ms(median(s.enrollLat)), ms(quantile(s.enrollLat, 99)), ms(s.enrollCPU)/float64(s.nodes), ms(s.harnessCPU)/float64(s.nodes), reqs,
			ms(median(s.list)), ms(quantile(s.list, 90)), ms(s.listCPU)/float64(len(s.list)),
			s.listAll.Seconds(), s.pages, float64(s.rss)/(1<<20), float64(s.peak)/(1<<20), sync, s.load)
	}
	_ = tw.Flush()
	ir := rs["ironic"]
	if ir == nil {
		fmt.Fprintln(w, "no Ironic figures: no ratios")
		return
	}
	for _, k := range order[1:] {
		s := rs[k]
		if s == nil {
			continue
		}
		fmt.Fprintf(w, "%s over Ironic: enroll %.1fx (goal >= 20x), list %.1fx faster (goal >= 10x); server CPU per enroll %.1fx less, per list %.1fx less; RSS %.2fx\n", s.name,
			s.enrollRate()/ir.enrollRate(), ms(median(ir.list))/ms(median(s.list)),
			float64(ir.enrollCPU)/float64(ir.nodes)/(float64(s.enrollCPU)/float64(s.nodes)),
			float64(ir.listCPU)/float64(len(ir.list))/(float64(s.listCPU)/float64(len(s.list))), float64(s.rss)/float64(ir.rss))
	}
}
