package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/console"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/httpapi"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// fakeConsoles stands for the console recorder (the real one, on
// ipmi_sim, is tested end to end in internal/app): one console per node,
// the first session that asks has the keyboard.
type fakeConsoles struct {
	mu       sync.Mutex
	sessions []*fakeSession
	writer   *fakeSession
	typed    chan string
}

type fakeSession struct {
	c      *fakeConsoles
	who    string
	out    chan []byte
	done   chan struct{}
	once   sync.Once
	writer bool
}

func newFakeConsoles() *fakeConsoles { return &fakeConsoles{typed: make(chan string, 100)} }

func (c *fakeConsoles) Attach(ctx context.Context, n *baremetal.Node, who string, write bool) (httpapi.ConsoleSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &fakeSession{c: c, who: who, out: make(chan []byte, 16), done: make(chan struct{})}
	if write && c.writer == nil {
		c.writer, s.writer = s, true
	}
	c.sessions = append(c.sessions, s)
	return s, nil
}

// print sends output to every open session.
func (c *fakeConsoles) print(b string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		select {
		case <-s.done:
		case s.out <- []byte(b):
		}
	}
}

func (s *fakeSession) Output() <-chan []byte { return s.out }
func (s *fakeSession) Done() <-chan struct{} { return s.done }
func (s *fakeSession) CanWrite() bool        { return s.writer }
func (s *fakeSession) Write(p []byte) error {
	if !s.writer {
		return console.ErrReadOnly
	}
	s.c.typed <- string(p)
	return nil
}

func (s *fakeSession) Close() {
	s.once.Do(func() {
		s.c.mu.Lock()
		if s.c.writer == s {
			s.c.writer = nil
		}
		s.c.mu.Unlock()
		close(s.done)
	})
}

func wsURL(base, path string) string { return "ws" + strings.TrimPrefix(base, "http") + path }

// dialConsole opens a console socket as the CLI does (Authorization
// header) or, with origin set, as a browser does (the token as a
// subprotocol, an Origin header).
func dialConsole(t *testing.T, base, path, token, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := &websocket.DialOptions{Subprotocols: []string{api.ConsoleSubprotocol}, HTTPHeader: http.Header{}}
	if origin == "" {
		o.HTTPHeader.Set("Authorization", "Bearer "+token)
	} else {
		o.HTTPHeader.Set("Origin", origin)
		o.Subprotocols = append(o.Subprotocols, api.ConsoleTokenProtocol(token))
	}
	return websocket.Dial(ctx, wsURL(base, path), o)
}

func readHello(t *testing.T, c *websocket.Conn) api.ConsoleHello {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageText {
		t.Fatalf("hello: %v %v %s", typ, err, b)
	}
	var h api.ConsoleHello
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("hello %s: %v", b, err)
	}
	return h
}

func readOutput(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageBinary {
		t.Fatalf("output: %v %v %s", typ, err, b)
	}
	return string(b)
}

// readClose reads until the socket closes and returns its status and
// reason.
func readClose(t *testing.T, c *websocket.Conn, within time.Duration) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("the socket did not close within %s: %v", within, err)
			}
			return ce.Code, ce.Reason
		}
	}
}

func consoleEvents(t *testing.T, e *env, node string) []api.Event {
	t.Helper()
	var list api.EventList
	e.mustJSON("GET", "/v1/nodes/"+node+"/events?limit=1000", adminSecret, "", 200, &list)
	var out []api.Event
	for _, ev := range list.Items {
		if strings.HasPrefix(ev.Type, "console_") {
			out = append(out, ev)
		}
	}
	return out
}

// TestConsoleWebSocket: an admin's session has the keyboard, a second
// (a browser's, its token as a subprotocol) watches; output reaches both,
// the writer's keys reach the console and the watcher's do not; the
// session outlives the server's read and write timeouts; each opening and
// closing is an event naming the token; a revoked token's session closes
// with 1008; other origins, members and plain GETs are refused.
func TestConsoleWebSocket(t *testing.T) {
	fc := newFakeConsoles()
	var opts httpapi.Options
	e := newEnv(t, storetest.OpenSQLite, func(o *httpapi.Options) {
		o.Consoles = fc
		o.ConsoleTokenCheck = 100 * time.Millisecond
		opts = *o
	})
	// The same API on a server with short timeouts, as the controller's
	// 60 s ones would end a console after a minute.
	srv := httptest.NewUnstartedServer(httpapi.New(opts))
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	n := e.createNode("console-1")
	path := "/v1/nodes/" + n.Name + "/console"

	var tok api.TokenCreated
	e.mustJSON("POST", "/v1/tokens", adminSecret, `{"role":"admin","name":"alice"}`, 201, &tok)
	a, _, err := dialConsole(t, srv.URL, path, tok.Secret, "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.CloseNow()
	if h := readHello(t, a); !h.Writer || h.NodeID != n.ID || h.NodeName != "console-1" {
		t.Fatalf("first session's hello: %+v", h)
	}
	b, resp, err := dialConsole(t, srv.URL, path+"?write=1", adminSecret, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.CloseNow()
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != api.ConsoleSubprotocol {
		t.Fatalf("the server chose subprotocol %q, want %q only (never the token)", got, api.ConsoleSubprotocol)
	}
	if h := readHello(t, b); h.Writer || !strings.Contains(h.Message, "another session") {
		t.Fatalf("second session's hello: %+v", h)
	}

	time.Sleep(700 * time.Millisecond) // past the server's timeouts
	fc.print("login: ")
	for _, c := range []*websocket.Conn{a, b} {
		if got := readOutput(t, c); got != "login: " {
			t.Fatalf("output %q", got)
		}
	}
	ctx := context.Background()
	if err := b.Write(ctx, websocket.MessageBinary, []byte("watcher")); err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, websocket.MessageBinary, []byte("root\r")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-fc.typed:
		if got != "root\r" {
			t.Fatalf("the console got %q, want the writer's keys", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the writer's keys did not reach the console")
	}

	// The watcher leaves; alice's token is revoked: her session closes.
	_ = b.Close(websocket.StatusNormalClosure, "")
	e.mustJSON("DELETE", "/v1/tokens/"+tok.ID, adminSecret, "", 204, nil)
	code, reason := readClose(t, a, 5*time.Second)
	if code != websocket.StatusPolicyViolation || !strings.Contains(reason, "revoked") {
		t.Fatalf("revoked token's session closed with %d %q", code, reason)
	}
	select {
	case got := <-fc.typed:
		t.Fatalf("the console got %q from a watcher", got)
	default:
	}

	var evs []api.Event
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if evs = consoleEvents(t, e, n.ID); len(evs) == 4 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var opened, closed, revoked int
	for _, ev := range evs {
		switch ev.Type {
		case "console_opened":
			opened++
		case "console_closed":
			closed++
			if strings.Contains(ev.Message, "revoked") && strings.Contains(ev.Actor, "alice") && strings.Contains(ev.Message, "keyboard") {
				revoked++
			}
		}
		if !strings.Contains(ev.Actor, "token:") {
			t.Errorf("event %s names no token: %q", ev.Type, ev.Actor)
		}
	}
	if opened != 2 || closed != 2 || revoked != 1 {
		t.Fatalf("console events: %+v", evs)
	}

	// Refusals: a member, another site's page, a plain GET.
	if _, resp, err := dialConsole(t, srv.URL, path, e.member, ""); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("a member opened a console: %v %v", err, resp)
	}
	if _, resp, err := dialConsole(t, srv.URL, path, adminSecret, "https://evil.example"); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("another origin opened a console: %v %v", err, resp)
	}
	if _, resp, err := dialConsole(t, srv.URL, path, "bmt_not-a-token", srv.URL); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("a bad token opened a console: %v %v", err, resp)
	}
	if r := e.do("GET", path, adminSecret, ""); r.status != 400 {
		t.Fatalf("plain GET: %d %s", r.status, r.body)
	}
}

// TestConsoleExpiredToken: a session whose token expires closes.
func TestConsoleExpiredToken(t *testing.T) {
	fc := newFakeConsoles()
	e := newEnv(t, storetest.OpenSQLite, func(o *httpapi.Options) {
		o.Consoles = fc
		o.ConsoleTokenCheck = 100 * time.Millisecond
	})
	n := e.createNode("console-2")
	var tok api.TokenCreated
	exp := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	e.mustJSON("POST", "/v1/tokens", adminSecret, `{"role":"admin","name":"brief","expires_at":"`+exp+`"}`, 201, &tok)
	c, _, err := dialConsole(t, e.srv.URL, "/v1/nodes/"+n.ID+"/console?write=0", tok.Secret, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if h := readHello(t, c); h.Writer {
		t.Fatalf("?write=0 has the keyboard: %+v", h)
	}
	code, reason := readClose(t, c, 10*time.Second)
	if code != websocket.StatusPolicyViolation || !strings.Contains(reason, "expired") {
		t.Fatalf("expired token's session closed with %d %q", code, reason)
	}
}

// elsewhereConsoles is a node whose console another replica records.
type elsewhereConsoles struct{}

func (elsewhereConsoles) Attach(context.Context, *baremetal.Node, string, bool) (httpapi.ConsoleSession, error) {
	return nil, fmt.Errorf("%w (replica-b/42/abcd)", console.ErrRecordedElsewhere)
}

// TestConsoleRecordedElsewhere: a console another replica holds is a 409
// saying so, before any upgrade and without an event.
func TestConsoleRecordedElsewhere(t *testing.T) {
	e := newEnv(t, storetest.OpenSQLite, func(o *httpapi.Options) { o.Consoles = elsewhereConsoles{} })
	n := e.createNode("console-3")
	_, resp, err := dialConsole(t, e.srv.URL, "/v1/nodes/"+n.ID+"/console", adminSecret, "")
	if err == nil || resp == nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("dial: %v, response %+v; want a 409", err, resp)
	}
	if evs := consoleEvents(t, e, n.ID); len(evs) != 0 {
		t.Fatalf("events of a session that never opened: %+v", evs)
	}
}

// TestConsoleClosedWhenTheControllerStops: CloseConsoles (the controller
// stops; http.Server.Shutdown leaves upgraded connections alone) closes
// every session with 1001 and the reason, and records their end.
func TestConsoleClosedWhenTheControllerStops(t *testing.T) {
	fc := newFakeConsoles()
	var opts httpapi.Options
	e := newEnv(t, storetest.OpenSQLite, func(o *httpapi.Options) {
		o.Consoles = fc
		opts = *o
	})
	h := httpapi.New(opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	n := e.createNode("console-4")
	c, _, err := dialConsole(t, srv.URL, "/v1/nodes/"+n.ID+"/console", adminSecret, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	readHello(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { h.CloseConsoles(ctx); close(done) }()
	code, reason := readClose(t, c, 10*time.Second)
	if code != websocket.StatusGoingAway || !strings.Contains(reason, "stopping") {
		t.Fatalf("closed with %d %q, want 1001 saying the controller stops", code, reason)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("CloseConsoles did not return")
	}
	var closed bool
	for _, ev := range consoleEvents(t, e, n.ID) {
		closed = closed || ev.Type == "console_closed" && strings.Contains(ev.Message, "stopping")
	}
	if !closed {
		t.Errorf("no console_closed event saying why: %+v", consoleEvents(t, e, n.ID))
	}
	// A new session is refused while stopping.
	if _, resp, err := dialConsole(t, srv.URL, "/v1/nodes/"+n.ID+"/console", adminSecret, ""); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a session after CloseConsoles: %v %+v", err, resp)
	}
}
