package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

const testPublicURL = "http://controller.test:8080"

// testReadiness covers deploy_timeout validation, the config drive route
// and the readiness callback in each state a deploy can be in.
func testReadiness(t *testing.T, e *env) {
	ctx := context.Background()
	for _, name := range []string{"r-0", "r-1", "r-2", "r-3"} {
		e.makeAvailable(e.createNode(name).ID)
	}
	create := func(name, extra string) api.Instance {
		var inst api.Instance
		e.mustJSON("POST", "/v1/instances", e.member, fmt.Sprintf(`{"name":%q,"resource_class":"gpu","image":{"url":"https://images.example/u.iso"}%s}`, name, extra), 201, &inst)
		return inst
	}
	for _, tc := range []struct{ value, want string }{
		{`"soon"`, "must be a positive duration"},
		{`"-5m"`, "must be a positive duration"},
		{`"10s"`, "between 1m0s and 24h0m0s"},
		{`"48h"`, "between 1m0s and 24h0m0s"},
		{`30`, ""},
	} {
		r := e.do("POST", "/v1/instances", e.member, `{"name":"bad","resource_class":"gpu","image":{"url":"https://i/x"},"deploy_timeout":`+tc.value+`}`)
		p := r.problem(t)
		if r.status != 400 || (p.Field != "deploy_timeout" && tc.want != "") || !strings.Contains(p.Detail, tc.want) {
			t.Errorf("deploy_timeout %s: %d %s", tc.value, r.status, r.body)
		}
	}

	inst := create("web", `,"deploy_timeout":"30m","user_data":"#cloud-config\nhostname: web\n","metadata":{"role":"web"}`)
	if inst.DeployTimeout != "30m" || inst.Ready || inst.BootedAt != nil {
		t.Fatalf("created: %+v", inst)
	}
	stored, err := e.st.GetInstance(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	token := stored.ReadyToken
	if !strings.HasPrefix(token, "rdy_") || len(token) < 40 {
		t.Fatalf("ready token %q", token)
	}

	// The config drive, as the BMC fetches it.
	drivePath := api.ConfigDrivePath(inst.ID, configdrive.Key(token))
	r := fetch(t, e, "GET", drivePath)
	if r.status != 200 || r.header.Get("Content-Type") != "application/x-iso9660-image" {
		t.Fatalf("config drive: %d %s", r.status, r.header)
	}
	d, err := configdrive.Parse(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if d.UUID != inst.ID || d.Hostname != "web" || string(d.UserData) != "#cloud-config\nhostname: web\n" || d.Meta["role"] != "web" ||
		d.ReadyURL != testPublicURL+"/v1/instances/"+inst.ID+"/ready" || d.ReadyToken != token {
		t.Fatalf("config drive content: %+v", d)
	}
	if r := fetch(t, e, "HEAD", drivePath); r.status != 200 || r.header.Get("Content-Length") == "" {
		t.Errorf("HEAD: %d %v", r.status, r.header)
	}
	if r := fetch(t, e, "GET", drivePath, "Range", "bytes=0-2047"); r.status != 206 || len(r.body) != 2048 {
		t.Errorf("Range: %d, %d bytes", r.status, len(r.body))
	}
	for name, path := range map[string]string{
		"wrong key":      api.ConfigDrivePath(inst.ID, configdrive.Key("rdy_guess")),
		"other instance": api.ConfigDrivePath("3f1d2c4b-0000-4000-8000-000000000000", configdrive.Key(token)),
		"not an id":      api.ConfigDrivePath("web", configdrive.Key(token)),
	} {
		if r := e.do("GET", path, "", ""); r.status != 404 || r.problem(t).Code != "not_found" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}

	// The callback is authenticated by the ready token and nothing else.
	readyPath := api.ReadyPath(inst.ID)
	for name, tok := range map[string]string{"no token": "", "admin API token": adminSecret, "member API token": e.member, "wrong ready token": "rdy_wrong"} {
		if r := e.do("POST", readyPath, tok, ""); r.status != 401 || r.problem(t).Code != "unauthorized" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	other := create("other", "")
	if r := e.do("POST", api.ReadyPath(other.ID), token, ""); r.status != 401 {
		t.Errorf("token of another instance: %d %s", r.status, r.body)
	}

	// Before power-on was observed: remembered, node still deploying.
	if r := e.do("POST", readyPath, token, ""); r.status != 204 {
		t.Fatalf("ready: %d %s", r.status, r.body)
	}
	var got api.Instance
	e.mustJSON("GET", "/v1/instances/"+inst.ID, e.member, "", 200, &got)
	if !got.Ready || got.State != "deploying" {
		t.Fatalf("after early callback: %+v", got)
	}
	if r := e.do("POST", readyPath, token, `{"anything":"goes"}`); r.status != 204 {
		t.Errorf("repeat: %d %s", r.status, r.body)
	}

	// Booted and waiting: the callback finishes the deploy.
	booted := time.Now().Add(-90 * time.Second)
	waiting := create("waiting", `,"deploy_timeout":"10m"`)
	setInstance(t, e, waiting.ID, func(i *baremetal.Instance) { i.BootedAt = &booted })
	wtok := readyToken(t, e, waiting.ID)
	if r := e.do("POST", api.ReadyPath(waiting.ID), wtok, ""); r.status != 204 {
		t.Fatalf("ready: %d %s", r.status, r.body)
	}
	e.mustJSON("GET", "/v1/instances/"+waiting.ID, e.member, "", 200, &got)
	if !got.Ready || got.State != "active" {
		t.Fatalf("after callback: %+v", got)
	}
	n, err := e.st.GetNode(ctx, waiting.NodeID)
	if err != nil || n.ProvisionState != baremetal.StateActive {
		t.Fatalf("node after callback: %+v %v", n, err)
	}
	evs, _, err := e.st.ListEvents(ctx, n.ID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.New != "active" || last.Actor != "instance:"+waiting.ID || !strings.Contains(last.Message, "reported ready 1m30s after power-on") {
		t.Errorf("event: %+v", last)
	}

	// Too late: the deploy had failed with deploy_timeout; the callback
	// heals it.
	e.mustJSON("DELETE", "/v1/instances/"+inst.ID, e.member, "", 202, nil)
	late := create("late", `,"deploy_timeout":"1m"`)
	setInstance(t, e, late.ID, func(i *baremetal.Instance) {
		i.BootedAt, i.State, i.LastError = &booted, baremetal.InstanceError, "the booted OS did not call ..."
	})
	ln, err := e.st.GetNode(ctx, late.NodeID)
	if err != nil {
		t.Fatal(err)
	}
	ln.ProvisionState, ln.Fault, ln.FaultSince, ln.LastError = baremetal.StateDeployFailed, baremetal.FaultDeployTimeout, &booted, "the booted OS did not call ..."
	if err := e.st.UpdateNode(ctx, ln); err != nil {
		t.Fatal(err)
	}
	if r := e.do("POST", api.ReadyPath(late.ID), readyToken(t, e, late.ID), ""); r.status != 204 {
		t.Fatalf("late ready: %d %s", r.status, r.body)
	}
	e.mustJSON("GET", "/v1/instances/"+late.ID, e.member, "", 200, &got)
	if ln, _ = e.st.GetNode(ctx, late.NodeID); got.State != "active" || got.LastError != "" || ln.ProvisionState != baremetal.StateActive || ln.Fault != "" {
		t.Fatalf("after late callback: instance %+v node %s fault %q", got, ln.ProvisionState, ln.Fault)
	}
	// The healed fault is told like any other: one event, by the OS.
	evs, _, err = e.st.ListEvents(ctx, ln.ID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var healed int
	for _, ev := range evs {
		if ev.Type == "fault" && ev.Old == "deploy_timeout" && ev.New == "" && ev.Actor == "instance:"+late.ID && strings.Contains(ev.Message, "fault deploy_timeout cleared after") {
			healed++
		}
	}
	if healed != 1 {
		t.Errorf("%d deploy_timeout-cleared events, want 1: %+v", healed, evs)
	}

	// Neither the token nor the drive's key shows in responses (the ISO,
	// which carries the token by design, is fetched around e.do) or logs.
	for what, s := range map[string]string{"responses": e.bodies.String(), "logs": e.logs.String()} {
		if strings.Contains(s, token) || strings.Contains(s, configdrive.Key(token)) {
			t.Errorf("the ready token or config drive key appears in %s", what)
		}
	}
}

func setInstance(t *testing.T, e *env, id string, fn func(i *baremetal.Instance)) {
	t.Helper()
	i, err := e.st.GetInstance(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	fn(i)
	if err := e.st.UpdateInstance(context.Background(), i); err != nil {
		t.Fatal(err)
	}
}

func readyToken(t *testing.T, e *env, id string) string {
	t.Helper()
	i, err := e.st.GetInstance(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return i.ReadyToken
}

// fetch is e.do without recording the body: config drives carry the ready
// token by design, and e.bodies must stay free of it.
func fetch(t *testing.T, e *env, method, path string, hdr ...string) resp {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}
