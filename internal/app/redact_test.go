package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/ipmi/ipmisim"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testenv"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

// The credentials of the echoing BMCs: every character a JSON, HTML-safe
// JSON, query or path encoder rewrites, so each encoding is a different
// string to look for.
const (
	echoUser     = "echo-admin"
	echoPassword = `EchoPW<Sess>&"q\ 100%/+:é'x`
	// IPMI passwords are at most 20 bytes.
	ipmiPassword = `IpmiPW<&>"\ %/+:'x`
)

// echoBMC is a Redfish BMC from the worst end of the market: it answers
// every authenticated request with an error whose body copies the request
// (line, headers, body, and the body's fields re-encoded as a form and as
// URL paths), as some BMCs do in their debug builds. Modes:
//
//	basic: no SessionService (basic auth); every request after the
//	       service root fails.
//	login: a SessionService whose login fails, echoing the login body.
//	token: the login works (with a session token of its own); every
//	       request with the token fails, echoing the token header.
//
// json selects a Redfish error document (message = the echo) instead of
// a plain-text body.
type echoBMC struct {
	srv   *httptest.Server
	mode  string
	json  bool
	token string
}

func startEchoBMC(t *testing.T, mode string, asJSON bool) *echoBMC {
	t.Helper()
	b := &echoBMC{mode: mode, json: asJSON, token: "EchoTok-" + randHex(t)}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func randHex(t *testing.T) string {
	p := make([]byte, 12)
	if _, err := rand.Read(p); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(p)
}

func (b *echoBMC) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/redfish/v1" && r.Method == http.MethodGet:
		root := map[string]any{"@odata.id": "/redfish/v1/", "Id": "RootService", "RedfishVersion": "1.6.0",
			"Systems": map[string]string{"@odata.id": "/redfish/v1/Systems"}}
		if b.mode != "basic" {
			root["SessionService"] = map[string]string{"@odata.id": "/redfish/v1/SessionService"}
			root["Links"] = map[string]any{"Sessions": map[string]string{"@odata.id": "/redfish/v1/SessionService/Sessions"}}
		}
		writeJSONBody(w, http.StatusOK, root)
		return
	case path == "/redfish/v1/SessionService/Sessions" && r.Method == http.MethodPost && b.mode == "token":
		w.Header().Set("X-Auth-Token", b.token)
		w.Header().Set("Location", "/redfish/v1/SessionService/Sessions/1")
		writeJSONBody(w, http.StatusCreated, map[string]string{"@odata.id": "/redfish/v1/SessionService/Sessions/1", "Id": "1"})
		return
	case path == "/redfish/v1/SessionService/Sessions/1" && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	}
	echo := b.echo(r, body)
	status := http.StatusBadRequest
	if b.json {
		status = http.StatusInternalServerError
		writeJSONBody(w, status, map[string]any{"error": map[string]any{
			"code": "Base.1.8.GeneralError", "message": echo,
			"@Message.ExtendedInfo": []map[string]string{{"MessageId": "Base.1.8.PropertyValueFormatError", "Message": "bad request: " + echo}},
		}})
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, echo)
}

func (b *echoBMC) echo(r *http.Request, body []byte) string {
	// The body first, so that a BMC message cut short still holds it.
	var sb strings.Builder
	fmt.Fprintf(&sb, "cannot process %s %s: ", r.Method, r.URL.RequestURI())
	sb.Write(body)
	var fields map[string]any
	if json.Unmarshal(body, &fields) == nil {
		form := url.Values{}
		for k, v := range fields {
			if s, ok := v.(string); ok {
				form.Set(k, s)
				fmt.Fprintf(&sb, "\npath /%s/%s", k, url.PathEscape(s))
			}
		}
		sb.WriteString("\nform " + form.Encode())
	}
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { // credentials first, then by name
		ci, cj := isCredential(keys[i]), isCredential(keys[j])
		if ci != cj {
			return ci
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		fmt.Fprintf(&sb, "\n%s: %s", k, strings.Join(r.Header[k], ", "))
	}
	return sb.String()
}

func isCredential(header string) bool { return header == "Authorization" || header == "X-Auth-Token" }

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// secretForms is every way a secret can be written down by us, a BMC or a
// store: as is, query- and path-escaped, JSON-escaped (Go's HTML-safe
// escaping and the plain one), and each of those JSON-escaped once more
// (an error string inside a JSON document: River's error column, an API
// response).
func secretForms(name, secret string) map[string]string {
	jsonInner := func(s string, html bool) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		return strings.TrimSuffix(strings.TrimSuffix(buf.String(), "\n"), `"`)[1:]
	}
	base := map[string]string{
		name:               secret,
		name + " (query)":  url.QueryEscape(secret),
		name + " (path)":   url.PathEscape(secret),
		name + " (json)":   jsonInner(secret, true),
		name + " (json/-)": jsonInner(secret, false),
	}
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
		out[k+" in json"] = jsonInner(v, true)
		out[k+" in json/-"] = jsonInner(v, false)
	}
	return out
}

// leakProbe counts occurrences of every form of every secret in what each
// sink holds.
type leakProbe struct {
	forms map[string]string // description -> exact bytes
	hits  map[string]int    // "sink: form" -> count
	total int
}

func newLeakProbe(secrets map[string]string) *leakProbe {
	p := &leakProbe{forms: map[string]string{}, hits: map[string]int{}}
	for name, s := range secrets {
		for k, v := range secretForms(name, s) {
			p.forms[k] = v
		}
	}
	return p
}

func (p *leakProbe) scan(sink string, data []byte) {
	// Several forms are the same bytes (base64 needs no escaping): count
	// each string once, under its shortest name.
	names := make([]string, 0, len(p.forms))
	for k := range p.forms {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) < len(names[j])
		}
		return names[i] < names[j]
	})
	seen := map[string]bool{}
	for _, k := range names {
		v := p.forms[k]
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		if n := bytes.Count(data, []byte(v)); n > 0 {
			p.hits[sink+": "+k] += n
			p.total += n
		}
	}
}

func (p *leakProbe) report(t *testing.T) {
	t.Helper()
	keys := make([]string, 0, len(p.hits))
	for k := range p.hits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %4d  %s", p.hits[k], k)
	}
	t.Logf("leak probe: %d occurrences of a BMC secret%s", p.total, b.String())
	if p.total > 0 {
		t.Errorf("BMC secrets leaked %d times", p.total)
	}
}

// udpEcho is an "IPMI BMC" that sends every datagram back to its sender:
// go-ipmi reads its own requests as answers.
func udpEcho(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(buf[:n], addr)
		}
	}()
	return fmt.Sprintf("ipmi://127.0.0.1:%d", pc.LocalAddr().(*net.UDPAddr).Port)
}

// TestBMCSecretsNeverKept enrolls nodes behind BMCs that echo our
// requests (Redfish basic auth, session login, session token; plain-text
// and Redfish JSON errors) and IPMI BMCs that fail in every way go-ipmi
// reports, then looks for every form of every credential in what the
// controller keeps and shows: the nodes' last_error, their events, the
// jobs API, the logs and (SQLite) the database file with its WAL.
func TestBMCSecretsNeverKept(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testBMCSecretsNeverKept(t, "") })
	t.Run("postgres", func(t *testing.T) {
		testBMCSecretsNeverKept(t, storetest.PostgresURL(t))
	})
}

func testBMCSecretsNeverKept(t *testing.T, dbURL string) {
	var logs testlog.Buffer
	env := testenv.Start(t, testenv.Options{Systems: 1, PowerSyncInterval: 200 * time.Millisecond, DatabaseURL: dbURL, Logs: &logs})
	ctx := context.Background()
	secrets := map[string]string{
		"password":      echoPassword,
		"ipmi password": ipmiPassword,
		"basic auth":    base64.StdEncoding.EncodeToString([]byte(echoUser + ":" + echoPassword)),
	}
	var specs []service.NodeSpec
	for _, mode := range []string{"basic", "login", "token"} {
		for _, asJSON := range []bool{false, true} {
			b := startEchoBMC(t, mode, asJSON)
			secrets["session token "+b.token[8:14]] = b.token
			specs = append(specs, service.NodeSpec{Name: fmt.Sprintf("echo-%s-%v", mode, asJSON), Driver: baremetal.DriverRedfish, ResourceClass: "echo",
				BMC: baremetal.BMC{Address: b.srv.URL, Username: echoUser, Password: echoPassword}})
		}
	}
	// IPMI: a "BMC" that echoes our datagrams, a closed port and, when
	// ipmi_sim is installed, a wrong password for a user it knows (the
	// RAKP mismatch path); go-ipmi's errors name the host and the user.
	type ipmiBMC struct{ addr, user string }
	ipmiBMCs := []ipmiBMC{{udpEcho(t), echoUser}, {"ipmi://127.0.0.1:9", echoUser}}
	if ipmisim.Available() {
		sim := ipmisim.Start(t)
		ipmiBMCs = append(ipmiBMCs, ipmiBMC{sim.Address(), sim.Username})
	} else {
		t.Log("ipmi_sim not installed: the wrong-password IPMI node is left out")
	}
	for i, b := range ipmiBMCs {
		specs = append(specs, service.NodeSpec{Name: fmt.Sprintf("echo-ipmi-%d", i), Driver: baremetal.DriverIPMI, ResourceClass: "echo",
			BMC: baremetal.BMC{Address: b.addr, Username: b.user, Password: ipmiPassword}})
	}
	var nodes []*baremetal.Node
	for _, s := range specs {
		n, err := env.App.Service.CreateNode(ctx, env.Admin(), s)
		if err != nil {
			t.Fatalf("enroll %s: %v", s.Name, err)
		}
		nodes = append(nodes, n)
	}
	// Wait for each node's fault (FaultThreshold failures, a fault event)
	// and for its verify job to have failed at least that often.
	for _, n := range nodes {
		env.WaitNode(t, n.ID, 60*time.Second, func(n *baremetal.Node) bool { return n.Fault != baremetal.FaultNone })
	}

	c := client{t: t, url: env.URL, token: env.AdminToken}
	probe := newLeakProbe(secrets)
	for _, n := range nodes {
		got := getRaw(c, "/v1/nodes/"+n.ID)
		var view api.Node
		if err := json.Unmarshal(got, &view); err != nil {
			t.Fatal(err)
		}
		if view.LastError == "" {
			t.Errorf("node %s has no last_error: the probe would prove nothing", n.Name)
		}
		t.Logf("%s: %s", n.Name, view.LastError)
		probe.scan("last_error", got)
		probe.scan("events", getRaw(c, "/v1/nodes/"+n.ID+"/events"))
		jobs := getRaw(c, "/v1/jobs?node_id="+n.ID)
		if !bytes.Contains(jobs, []byte(`"last_error"`)) {
			t.Errorf("node %s: no job with a last_error: %s", n.Name, jobs)
		}
		probe.scan("jobs API", jobs)
	}
	probe.scan("logs", logs.Bytes())
	if dbURL == "" {
		// The database as it sits on disk, written-back pages and WAL.
		for _, f := range []string{"baremetal.db", "baremetal.db-wal"} {
			b, err := os.ReadFile(filepath.Join(env.DataDir, f))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			probe.scan("sqlite "+f, b)
		}
	}
	probe.report(t)
}

func getRaw(c client, path string) []byte {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %d: %s", path, res.StatusCode, b)
	}
	return b
}
