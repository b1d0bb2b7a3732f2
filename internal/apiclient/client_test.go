package apiclient

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

const testToken = "s3cr3t-token-value"

// newTestClient returns a client of srv with fast retries and a log that
// records every field it was given.
func newTestClient(t *testing.T, srv *httptest.Server, mod func(*Options)) (*Client, *logRecorder) {
	t.Helper()
	rec := &logRecorder{}
	opts := Options{
		Token:        testToken,
		RetryWaitMin: time.Millisecond,
		RetryWaitMax: 5 * time.Millisecond,
		Log:          rec.log,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := New(srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) log(_ context.Context, msg string, fields map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprint(msg, fields))
}

func (r *logRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeProblem(w http.ResponseWriter, status int, code, detail, field string) {
	w.Header().Set("Content-Type", api.ProblemContentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Problem{
		Type: api.ProblemTypeBase + code, Title: http.StatusText(status), Status: status,
		Detail: detail, Code: api.ProblemCode(code), Field: field,
	})
}

// TestNoCapacityCounts: the counts of a 409 no_capacity, as the
// controller writes them, reach the caller; other errors, and a
// no_capacity without counts (an older controller), carry none.
func TestNoCapacityCounts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", api.ProblemContentType)
		switch r.URL.Query().Get("case") {
		case "counts":
			w.WriteHeader(409)
			_, _ = io.WriteString(w, `{"type":"https://baremetal-tf.github.io/problems/no_capacity","title":"No capacity","status":409,`+
				`"detail":"no node of class \"gpu\" is available: 1 cleaning, 2 in maintenance","code":"no_capacity","field":"resource_class",`+
				`"capacity":{"nodes":3,"maintenance":2,"fault":0,"unsuitable_driver":0,"busy":0,"cleaning":1,"enroll":0,"deleting":0,"pending":1}}`)
		case "bare":
			writeProblem(w, 409, "no_capacity", "no node of class \"gpu\" is available: 1 in maintenance", "resource_class")
		default:
			writeProblem(w, 409, "conflict", "an instance named i exists", "name")
		}
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	get := func(which string) error {
		_, err := c.do(context.Background(), request{method: http.MethodGet, path: "/v1/instances",
			query: url.Values{"case": {which}}})
		return err
	}

	err := get("counts")
	got, ok := NoCapacity(err)
	want := api.Capacity{Nodes: 3, Maintenance: 2, Cleaning: 1, Pending: 1}
	if !ok || !reflect.DeepEqual(*got, want) || !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("NoCapacity(%v) = %+v, %v; want %+v", err, got, ok, want)
	}
	if ae, _ := AsAPIError(err); ae.Capacity() != got || !strings.Contains(ae.Detail(), "1 cleaning, 2 in maintenance") {
		t.Fatalf("APIError %+v", ae)
	}
	for _, which := range []string{"bare", "conflict"} {
		err := get(which)
		if c, ok := NoCapacity(err); ok || c != nil || !errors.Is(err, ErrConflict) {
			t.Fatalf("%s: NoCapacity(%v) = %+v, %v", which, err, c, ok)
		}
	}
	if _, ok := NoCapacity(errors.New("dial tcp: refused")); ok {
		t.Fatal("a transport error has counts")
	}
}

func TestGetNodeSendsTokenAndReturnsETag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
			writeProblem(w, 401, "unauthorized", "bad token", "")
			return
		}
		if r.Method != http.MethodGet || r.URL.EscapedPath() != "/v1/nodes/node%201" {
			t.Errorf("unexpected %s %s", r.Method, r.URL.EscapedPath())
		}
		w.Header().Set("ETag", `"7"`)
		writeJSON(w, 200, api.Node{ID: "n1", Name: "node 1", Version: 7, BMC: &api.BMC{Address: "https://bmc"}})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, func(o *Options) { o.UserAgent = "test-agent/1" })

	n, etag, err := c.GetNodeETag(context.Background(), "node 1")
	if err != nil {
		t.Fatal(err)
	}
	if n.ID != "n1" || n.BMC.Address != "https://bmc" || etag != `"7"` {
		t.Fatalf("got %+v etag %q", n, etag)
	}
}

func TestProblemBecomesAPIErrorWithSentinels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/nodes/missing":
			writeProblem(w, 404, "not_found", "node missing not found", "")
		case "/v1/nodes":
			writeProblem(w, 400, "invalid", "bmc.address must be a URL", "bmc.address")
		case "/v1/instances":
			writeProblem(w, 409, "no_capacity", "no available node of resource class gpu: 2 in maintenance, 1 faulted", "resource_class")
		}
	}))
	defer srv.Close()
	c, rec := newTestClient(t, srv, nil)
	ctx := context.Background()

	_, err := c.GetNode(ctx, "missing")
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
		t.Fatalf("want ErrNotFound only, got %v", err)
	}
	ae, ok := AsAPIError(err)
	if !ok || ae.StatusCode() != 404 || ae.Detail() != "node missing not found" {
		t.Fatalf("bad APIError %#v", ae)
	}

	_, err = c.CreateNode(ctx, api.NodeCreate{Name: "x", BMC: api.BMCInput{Address: "nope", Password: "hunter2"}})
	ae, ok = AsAPIError(err)
	if !ok || !errors.Is(err, ErrInvalid) || ae.Field() != "bmc.address" {
		t.Fatalf("want invalid bmc.address, got %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the BMC password: %v", err)
	}

	_, err = c.CreateInstance(ctx, api.InstanceCreate{Name: "i", ResourceClass: "gpu"})
	if !errors.Is(err, ErrNoCapacity) || !errors.Is(err, ErrConflict) {
		t.Fatalf("want no_capacity (a conflict), got %v", err)
	}
	if !strings.Contains(err.Error(), "2 in maintenance, 1 faulted") {
		t.Fatalf("error lost the server's detail: %v", err)
	}
	for _, s := range []string{err.Error(), rec.String()} {
		if strings.Contains(s, testToken) || strings.Contains(s, "hunter2") {
			t.Fatalf("secret leaked: %s", s)
		}
	}
}

func TestNonProblemErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "<html>\n<body>upstream \x00exploded</body></html>")
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	_, err := c.GetNode(context.Background(), "n")
	ae, ok := AsAPIError(err)
	if !ok || ae.StatusCode() != 500 || !errors.Is(err, ErrServer) || !strings.Contains(ae.Detail(), "upstream exploded") {
		t.Fatalf("got %v", err)
	}
}

func TestRetriesGatewayErrorsOnIdempotentRequests(t *testing.T) {
	for _, status := range []int{502, 503, 504} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) < 3 {
					writeProblem(w, status, "unavailable", "try later", "")
					return
				}
				writeJSON(w, 200, api.Node{ID: "n1"})
			}))
			defer srv.Close()
			c, _ := newTestClient(t, srv, nil)
			if _, err := c.GetNode(context.Background(), "n1"); err != nil {
				t.Fatal(err)
			}
			if calls.Load() != 3 {
				t.Fatalf("want 3 attempts, got %d", calls.Load())
			}
		})
	}
}

func TestDoesNotRetryOtherStatuses(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 412, 422, 500} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			writeProblem(w, status, "", "no", "")
		}))
		c, _ := newTestClient(t, srv, nil)
		_, err := c.GetNode(context.Background(), "n1")
		srv.Close()
		if err == nil || calls.Load() != 1 {
			t.Fatalf("status %d: want one attempt and an error, got %d, %v", status, calls.Load(), err)
		}
	}
}

func TestGivesUpAfterMaxRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeProblem(w, 503, "unavailable", "store unreachable", "")
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, func(o *Options) { o.MaxRetries = 2 })
	_, err := c.GetNode(context.Background(), "n1")
	if !errors.Is(err, ErrUnavailable) || calls.Load() != 3 {
		t.Fatalf("want ErrUnavailable after 3 attempts, got %d: %v", calls.Load(), err)
	}
}

// A POST without an Idempotency-Key (a power action) may have been
// applied once it got an answer: not repeated.
func TestPostIsNotRetriedOnAResponse(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeProblem(w, 503, "unavailable", "busy", "")
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	_, err := c.NodePower(context.Background(), "n1", api.ActionOn)
	if !errors.Is(err, ErrUnavailable) || calls.Load() != 1 {
		t.Fatalf("want one attempt, got %d: %v", calls.Load(), err)
	}
}

// Creates carry an Idempotency-Key, the same on every attempt: the
// server creates once however often they are sent, so they are retried
// like idempotent requests.
func TestCreatesAreRetriedUnderOneKey(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		if n < 3 {
			writeProblem(w, 503, "unavailable", "busy", "")
			return
		}
		writeJSON(w, 201, api.Instance{ID: "i1"})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	if _, err := c.CreateInstance(context.Background(), api.InstanceCreate{Name: "i"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateNode(context.Background(), api.NodeCreate{Name: "n"}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 4 || keys[0] == "" || keys[0] != keys[1] || keys[1] != keys[2] || keys[3] == keys[0] || !strings.HasPrefix(keys[3], "idk_") {
		t.Fatalf("Idempotency-Keys sent: %q (want one key for the create's three attempts, a new one for the next create)", keys)
	}
}

// flakyTransport fails the first n round trips with err, then delegates.
type flakyTransport struct {
	n     int32
	err   error
	calls atomic.Int32
	next  http.RoundTripper
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.calls.Add(1) <= f.n {
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			_ = r.Body.Close()
		}
		return nil, f.err
	}
	return f.next.RoundTrip(r)
}

func TestTransportErrorRetries(t *testing.T) {
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	resetErr := io.ErrUnexpectedEOF
	cases := []struct {
		name      string
		err       error
		post      bool
		wantCalls int32
		wantOK    bool
	}{
		{"get retried on dial error", dialErr, false, 3, true},
		{"post retried on dial error (never sent)", dialErr, true, 3, true},
		{"get retried on reset", resetErr, false, 3, true},
		{"post not retried on reset (maybe applied)", resetErr, true, 1, false},
		{"create retried on reset (its key makes it safe)", resetErr, false, 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var bodies []string
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, string(b))
				mu.Unlock()
				writeJSON(w, 201, api.Instance{ID: "i1"})
			}))
			defer srv.Close()
			ft := &flakyTransport{n: 2, err: tc.err, next: http.DefaultTransport}
			c, _ := newTestClient(t, srv, func(o *Options) { o.Transport = ft })
			var err error
			switch {
			case tc.post:
				_, err = c.NodePower(context.Background(), "n1", api.ActionOn)
			case strings.HasPrefix(tc.name, "create"):
				_, err = c.CreateInstance(context.Background(), api.InstanceCreate{Name: "i"})
			default:
				_, err = c.GetInstance(context.Background(), "i1")
			}
			if (err == nil) != tc.wantOK || ft.calls.Load() != tc.wantCalls {
				t.Fatalf("calls %d err %v", ft.calls.Load(), err)
			}
			if tc.post && tc.wantOK && (len(bodies) != 1 || !strings.Contains(bodies[0], `"target":"on"`)) {
				t.Fatalf("retried POST lost its body: %q", bodies)
			}
		})
	}
}

func TestContextCancelsBackoff(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, 503, "unavailable", "down", "")
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, func(o *Options) {
		o.RetryWaitMin = time.Minute
		o.RetryWaitMax = time.Minute
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.GetNode(ctx, "n1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("backoff ignored the context: %v", d)
	}
}

func TestContextCancelsHangingRequest(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c, _ := newTestClient(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.GetNode(ctx, "n1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
}

func TestPerAttemptTimeoutIsRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		writeJSON(w, 200, api.Node{ID: "n1"})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, func(o *Options) { o.Timeout = 100 * time.Millisecond })
	if _, err := c.GetNode(context.Background(), "n1"); err != nil || calls.Load() != 2 {
		t.Fatalf("calls %d, err %v", calls.Load(), err)
	}
}

func TestRetryAfterIsHonouredUpToMax(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "3600")
			writeProblem(w, 503, "unavailable", "later", "")
			return
		}
		writeJSON(w, 200, api.Node{ID: "n1"})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, func(o *Options) { o.RetryWaitMax = 50 * time.Millisecond })
	start := time.Now()
	if _, err := c.GetNode(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Retry-After not capped: %v", d)
	}
}

func TestListNodesFollowsCursorsWithFilter(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		q := r.URL.Query()
		if q.Get("fault") != "any" || q.Get("maintenance") != "false" || q.Get("resource_class") != "gpu" || q.Get("provision_state") != "available" {
			t.Errorf("filter lost: %s", r.URL.RawQuery)
		}
		switch q.Get("cursor") {
		case "":
			writeJSON(w, 200, api.NodeList{Items: []api.Node{{ID: "a"}, {ID: "b"}}, NextCursor: "c1"})
		case "c1":
			writeJSON(w, 200, api.NodeList{Items: []api.Node{{ID: "c"}}, NextCursor: "c2"})
		case "c2":
			writeJSON(w, 200, api.NodeList{Items: []api.Node{{ID: "d"}}})
		}
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	no := false
	nodes, err := c.ListNodes(context.Background(), NodeFilter{Fault: "any", Maintenance: &no, ResourceClass: "gpu", ProvisionState: "available"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	if strings.Join(ids, ",") != "a,b,c,d" || len(queries) != 3 {
		t.Fatalf("ids %v after %d pages", ids, len(queries))
	}

	// Stopping early fetches no further page.
	queries = nil
	for n, err := range c.Nodes(context.Background(), NodeFilter{Fault: "any", Maintenance: &no, ResourceClass: "gpu", ProvisionState: "available"}) {
		if err != nil || n.ID != "a" {
			t.Fatalf("got %v %v", n, err)
		}
		break
	}
	if len(queries) != 1 {
		t.Fatalf("early stop fetched %d pages", len(queries))
	}

	// An iterator ranged over again starts again at the first page.
	seq := c.Nodes(context.Background(), NodeFilter{Fault: "any", Maintenance: &no, ResourceClass: "gpu", ProvisionState: "available"})
	for round := range 2 {
		queries = nil
		n := 0
		for _, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 4 || len(queries) != 3 || strings.Contains(queries[0], "cursor") {
			t.Fatalf("round %d: %d nodes from %d pages, first query %q", round, n, len(queries), queries[0])
		}
	}
}

// A server that answers every page with the same cursor does not make a
// list loop forever: the list ends at the first repeat.
func TestListStopsOnARepeatedCursor(t *testing.T) {
	pages := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages++
		writeJSON(w, 200, api.TokenList{Items: []api.Token{{ID: fmt.Sprint("t", pages)}}, NextCursor: "same"})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	toks, err := c.ListTokens(context.Background())
	if err != nil || len(toks) != 2 || pages != 2 {
		t.Fatalf("%d tokens from %d pages (%v); want 2 from 2", len(toks), pages, err)
	}
}

// Whether nodes being retired are listed is always said: the server's
// default changed (they are listed unless include_deleting=false), and a
// client asking for nodes in service only must get them from any server.
func TestListNodesSaysIncludeDeleting(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Query().Get("include_deleting"))
		writeJSON(w, 200, api.NodeList{})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	for _, inc := range []bool{false, true} {
		if _, err := c.ListNodes(context.Background(), NodeFilter{IncludeDeleting: inc}); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, ",") != "false,true" {
		t.Fatalf("include_deleting sent as %q; want false, then true", got)
	}
}

func TestListNodesEmptyIsNotNil(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, api.NodeList{})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	nodes, err := c.ListNodes(context.Background(), NodeFilter{})
	if err != nil || nodes == nil || len(nodes) != 0 {
		t.Fatalf("got %#v, %v", nodes, err)
	}
}

func TestPatchNodeSendsMergePatchAndIfMatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPatch {
			t.Errorf("method %s", r.Method)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/merge-patch+json" {
			t.Errorf("content type %q", ct)
		}
		if r.Header.Get("If-Match") != `"3"` {
			writeProblem(w, 412, "precondition_failed", "node changed", "")
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		want := `map[bmc:map[address:https://new] maintenance:true maintenance_reason:disk swap]`
		if fmt.Sprint(body) != want {
			t.Errorf("body %v, want %s", body, want)
		}
		writeJSON(w, 200, api.Node{ID: "n1", Maintenance: true})
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	yes, reason, addr := true, "disk swap", "https://new"
	patch := api.NodePatch{Maintenance: &yes, MaintenanceReason: &reason, BMC: &api.BMCPatch{Address: &addr}}
	n, err := c.PatchNode(context.Background(), "n1", patch, `"3"`)
	if err != nil || !n.Maintenance {
		t.Fatalf("got %+v, %v", n, err)
	}
	_, err = c.PatchNode(context.Background(), "n1", map[string]any{"maintenance": false}, `"2"`)
	if !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("want precondition failed, got %v", err)
	}
}

func TestDeleteNodeAndInstance(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete {
			t.Errorf("method %s", r.Method)
		}
		switch r.URL.Path {
		case "/v1/nodes/n1":
			if r.URL.Query().Get("force") != "true" {
				writeProblem(w, 409, "conflict", "node has an instance", "")
				return
			}
			writeJSON(w, 202, api.Accepted{JobID: 42, Message: "retiring"})
		case "/v1/instances/i1":
			w.WriteHeader(http.StatusAccepted) // no body is fine too
		default:
			writeProblem(w, 404, "not_found", "gone", "")
		}
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	ctx := context.Background()
	if _, err := c.DeleteNode(ctx, "n1", false); !errors.Is(err, ErrConflict) {
		t.Fatalf("want conflict, got %v", err)
	}
	a, err := c.DeleteNode(ctx, "n1", true)
	if err != nil || a.JobID != 42 {
		t.Fatalf("got %+v %v", a, err)
	}
	if _, err := c.DeleteInstance(ctx, "i1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteInstance(ctx, "i2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want not found, got %v", err)
	}
}

func TestInstancesAndEventsAndTokens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/instances" && r.Method == http.MethodGet:
			if r.URL.Query().Get("cursor") == "" {
				writeJSON(w, 200, api.InstanceList{Items: []api.Instance{{ID: "i1"}}, NextCursor: "x"})
				return
			}
			writeJSON(w, 200, api.InstanceList{Items: []api.Instance{{ID: "i2"}}})
		case r.URL.Path == "/v1/instances/i1" && r.Method == http.MethodPatch:
			var u map[string]any
			_ = json.NewDecoder(r.Body).Decode(&u)
			if fmt.Sprint(u) != "map[power_state:off]" {
				t.Errorf("patch body %v", u)
			}
			writeJSON(w, 200, api.Instance{ID: "i1", PowerState: "off"})
		case r.URL.Path == "/v1/nodes/n1/events":
			if r.URL.Query().Get("cursor") == "" {
				writeJSON(w, 200, api.EventList{Items: []api.Event{{ID: 1, Type: "maintenance"}}, NextCursor: "2"})
				return
			}
			writeJSON(w, 200, api.EventList{Items: []api.Event{{ID: 2, Type: "fault"}}})
		case r.URL.Path == "/v1/nodes/n1/power":
			var p api.PowerRequest
			_ = json.NewDecoder(r.Body).Decode(&p)
			writeJSON(w, 202, api.Accepted{JobID: 9, Message: "power " + string(p.Target)})
		case r.URL.Path == "/v1/tokens" && r.Method == http.MethodPost:
			writeJSON(w, 201, api.TokenCreated{Token: api.Token{ID: "t1", Role: "member", Project: "p"}, Secret: "tok"})
		case r.URL.Path == "/v1/tokens/t1":
			w.WriteHeader(204)
		default:
			writeProblem(w, 404, "not_found", r.URL.Path, "")
		}
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	ctx := context.Background()

	ins, err := c.ListInstances(ctx)
	if err != nil || len(ins) != 2 || ins[1].ID != "i2" {
		t.Fatalf("instances %+v %v", ins, err)
	}
	off := api.PowerOff
	in, err := c.PatchInstance(ctx, "i1", api.InstanceUpdate{PowerState: &off})
	if err != nil || in.PowerState != "off" {
		t.Fatalf("patch %+v %v", in, err)
	}
	ev, err := c.ListNodeEvents(ctx, "n1")
	if err != nil || len(ev) != 2 || ev[1].Type != "fault" {
		t.Fatalf("events %+v %v", ev, err)
	}
	a, err := c.NodePower(ctx, "n1", "off")
	if err != nil || a.Message != "power off" {
		t.Fatalf("power %+v %v", a, err)
	}
	tc, err := c.CreateToken(ctx, api.TokenCreate{Role: "member", Project: "p"})
	if err != nil || tc.Secret != "tok" || tc.ID != "t1" {
		t.Fatalf("token %+v %v", tc, err)
	}
	if err := c.DeleteToken(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	var sawToken atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawToken.Store(true)
		}
		writeJSON(w, 200, api.Node{ID: "evil"})
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, nil)
	if _, err := c.GetNode(context.Background(), "n1"); err == nil {
		t.Fatal("redirect followed")
	}
	if sawToken.Load() {
		t.Fatal("token sent to the redirect target")
	}
}

func TestNewValidatesEndpoint(t *testing.T) {
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://host", "http://", "http://user:pw@host", "http://host/?q=1"} {
		if _, err := New(bad, Options{}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q) error leaks credentials: %v", bad, err)
		}
	}
	c, err := New("https://ctl.example:8443/api/", Options{})
	if err != nil || c.Endpoint() != "https://ctl.example:8443/api" {
		t.Fatalf("got %v %v", c, err)
	}
	if _, err := New("https://ctl.example", Options{CAFile: "/nonexistent/ca.pem"}); err == nil {
		t.Error("missing CA file accepted")
	}
	if _, err := New("https://ctl.example", Options{CAPEM: []byte("not a cert")}); err == nil {
		t.Error("bad CA PEM accepted")
	}
}

func TestTLSWithCAAndInsecure(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, api.Node{ID: "n1"})
	}))
	defer srv.Close()
	ctx := context.Background()

	// Unknown CA: fails at once, no retries.
	c, err := New(srv.URL, Options{RetryWaitMin: time.Second, RetryWaitMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.GetNode(ctx, "n1"); err == nil {
		t.Fatal("untrusted certificate accepted")
	}
	if time.Since(start) > 900*time.Millisecond {
		t.Fatal("certificate error was retried")
	}

	certPEM := pemEncode(srv.Certificate().Raw)
	c, err = New(srv.URL, Options{CAPEM: certPEM})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetNode(ctx, "n1"); err != nil {
		t.Fatalf("with CA: %v", err)
	}

	c, err = New(srv.URL, Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetNode(ctx, "n1"); err != nil {
		t.Fatalf("insecure: %v", err)
	}
}

func pemEncode(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
