package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/console"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

// Consoles attaches interactive sessions to nodes' consoles
// (console.Recorder, through RecorderConsoles).
type Consoles interface {
	Attach(ctx context.Context, n *baremetal.Node, who string, write bool) (ConsoleSession, error)
}

// ConsoleSession is one viewer of a node's console (console.Session).
type ConsoleSession interface {
	Output() <-chan []byte
	Done() <-chan struct{}
	Write(p []byte) error
	Close()
	CanWrite() bool
}

// RecorderConsoles serves the consoles of r.
func RecorderConsoles(r *console.Recorder) Consoles { return recorderConsoles{r} }

type recorderConsoles struct{ r *console.Recorder }

func (c recorderConsoles) Attach(ctx context.Context, n *baremetal.Node, who string, write bool) (ConsoleSession, error) {
	if !c.r.HasConsole(ctx, n) {
		return nil, baremetal.Errorf(baremetal.CodeInvalidState, "node %s has no serial console the controller can open (driver %s; consoles are IPMI Serial-over-LAN)", n.Name, n.Driver)
	}
	s, err := c.r.Attach(ctx, n.ID, who, write)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// consoleSessions are the open console WebSockets, so that a stopping
// controller closes them with a reason and records their end.
type consoleSessions struct {
	mu      sync.Mutex
	cancels map[*int]context.CancelCauseFunc
	wg      sync.WaitGroup
	closed  bool
}

var errStopping = errors.New("the controller is stopping")

// CloseConsoles ends the open console sessions (the controller stops)
// and waits for them to record their end, at most until ctx is done.
// Hijacked connections are not http.Server.Shutdown's.
func (s *Server) CloseConsoles(ctx context.Context) {
	cs := &s.consoles
	cs.mu.Lock()
	cs.closed = true
	for _, cancel := range cs.cancels {
		cancel(errStopping)
	}
	cs.mu.Unlock()
	done := make(chan struct{})
	go func() { cs.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// nodeConsole is the node's interactive console over a WebSocket (see
// api.ConsoleSubprotocol for the protocol).
func (s *Server) nodeConsole(w http.ResponseWriter, r *http.Request, c service.Caller) {
	n, err := s.svc.NodeConsole(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !isWebSocket(r) {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeInvalid, "GET %s is a WebSocket: connect with Upgrade: websocket (the CLI's `controller node console`, or the dashboard's console page)", r.URL.Path))
		return
	}
	if !s.sameOrigin(r) {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "a console WebSocket from origin %q is refused: only the controller's own pages may open one", r.Header.Get("Origin")))
		return
	}
	if s.consoleOpener == nil {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeUnavailable, "this controller serves no interactive consoles"))
		return
	}
	q := r.URL.Query()
	write := q.Get("write") != "0" && q.Get("write") != "false"

	cs := &s.consoles
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	defer cancel(nil)
	key := new(int)
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeUnavailable, "the controller is stopping"))
		return
	}
	if cs.cancels == nil {
		cs.cancels = map[*int]context.CancelCauseFunc{}
	}
	cs.cancels[key] = cancel
	cs.wg.Add(1)
	cs.mu.Unlock()
	defer func() {
		cs.mu.Lock()
		delete(cs.cancels, key)
		cs.mu.Unlock()
		cs.wg.Done()
	}()

	sess, err := s.consoleOpener.Attach(ctx, n, string(c.Actor()), write)
	if err != nil {
		var be *baremetal.Error
		if errors.As(err, &be) {
			// as it is
		} else if errors.Is(err, console.ErrRecordedElsewhere) {
			err = baremetal.Errorf(baremetal.CodeConflict, "%s: connect to that replica, or wait for its recording to end", console.ErrRecordedElsewhere)
		} else {
			err = baremetal.Errorf(baremetal.CodeUnavailable, "the console of node %s cannot be opened: %s", n.Name, err)
		}
		s.writeError(w, r, err)
		return
	}
	defer sess.Close()

	// The server's read and write timeouts are for requests; a console
	// lasts as long as its user wants.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{api.ConsoleSubprotocol},
		// sameOrigin checked the origin (the public URL's host too).
		InsecureSkipVerify: true,
	})
	if err != nil {
		s.log.WarnContext(ctx, "console websocket not accepted", "node_id", n.ID, "err", err)
		return
	}
	conn.SetReadLimit(64 << 10)

	writer := sess.CanWrite()
	started := time.Now()
	if err := s.svc.ConsoleOpened(ctx, c, n, writer); err != nil {
		s.log.WarnContext(ctx, "console session: cannot record its opening", "node_id", n.ID, "err", err)
		_ = conn.Close(websocket.StatusInternalError, "the session could not be recorded")
		return
	}
	s.log.InfoContext(ctx, "console session opened", "node_id", n.ID, "by", c.Actor(), "writer", writer)
	status, why := s.consoleLoop(ctx, c, conn, sess, api.ConsoleHello{NodeID: n.ID, NodeName: n.Name, Writer: writer, Message: helloMessage(write, writer)})
	_ = conn.Close(status, why)
	d := time.Since(started)
	ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer ecancel()
	if err := s.svc.ConsoleClosed(ectx, c, n, writer, d, why); err != nil {
		s.log.WarnContext(ctx, "console session: cannot record its end", "node_id", n.ID, "err", err)
	}
	s.log.InfoContext(ctx, "console session closed", "node_id", n.ID, "by", c.Actor(), "writer", writer, "took", d.Round(time.Second), "why", why)
}

func helloMessage(asked, writer bool) string {
	switch {
	case writer:
		return "you have the console's keyboard; other sessions watch"
	case asked:
		return "another session has the console's keyboard: this one watches (read-only)"
	default:
		return "watching (read-only)"
	}
}

// consoleLoop copies the console to the socket and keystrokes back until
// one side ends; it returns the close status and reason.
func (s *Server) consoleLoop(ctx context.Context, c service.Caller, conn *websocket.Conn, sess ConsoleSession, hello api.ConsoleHello) (websocket.StatusCode, string) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hb, _ := json.Marshal(hello)
	if err := s.consoleSend(ctx, conn, websocket.MessageText, hb); err != nil {
		return websocket.StatusGoingAway, "the client did not take the greeting"
	}
	// Keystrokes: read until the client closes or the socket fails.
	clientGone := make(chan error, 1)
	// The reader's context is not the session's: coder/websocket closes
	// the connection when a Read's context ends, which would cut the
	// close frame (1001, why) the session sends when it is stopped. The
	// read ends when the connection closes.
	rctx := context.WithoutCancel(ctx)
	go func() {
		for {
			_, b, err := conn.Read(rctx)
			if err != nil {
				clientGone <- err
				return
			}
			if !hello.Writer {
				continue // a watcher's keys go nowhere
			}
			if err := sess.Write(b); err != nil && !errors.Is(err, console.ErrReadOnly) {
				// The console is reopening: tell the user, keep going.
				note, _ := json.Marshal(api.ConsoleHello{NodeID: hello.NodeID, NodeName: hello.NodeName, Writer: hello.Writer, Message: err.Error()})
				_ = s.consoleSend(ctx, conn, websocket.MessageText, note)
			}
		}
	}()
	check := time.NewTicker(s.consoleTokenCheck)
	defer check.Stop()
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case b := <-sess.Output():
			if err := s.consoleSend(ctx, conn, websocket.MessageBinary, b); err != nil {
				return websocket.StatusGoingAway, "the client stopped reading"
			}
		case <-sess.Done():
			// Send what arrived before the end.
		drain:
			for {
				select {
				case b := <-sess.Output():
					_ = s.consoleSend(ctx, conn, websocket.MessageBinary, b)
				default:
					break drain
				}
			}
			if ctx.Err() != nil {
				return websocket.StatusGoingAway, closeReason(context.Cause(ctx))
			}
			return websocket.StatusNormalClosure, "the node's console ended"
		case err := <-clientGone:
			if ctx.Err() != nil {
				return websocket.StatusGoingAway, closeReason(context.Cause(ctx))
			}
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure || websocket.CloseStatus(err) == websocket.StatusGoingAway {
				return websocket.StatusNormalClosure, "closed by the client"
			}
			return websocket.StatusNormalClosure, "the client went away"
		case <-ctx.Done():
			return websocket.StatusGoingAway, closeReason(context.Cause(ctx))
		case <-check.C:
			if err := s.svc.TokenStillValid(ctx, c); err != nil {
				if baremetal.IsCode(err, baremetal.CodeUnauthorized) {
					return websocket.StatusPolicyViolation, baremetal.ErrorMessage(err)
				}
				s.log.WarnContext(ctx, "console session: cannot check its token", "err", err)
			}
		case <-ping.C:
			pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second) // see consoleSend
			err := conn.Ping(pctx)
			pcancel()
			if err != nil {
				return websocket.StatusGoingAway, "the client did not answer a ping"
			}
		}
	}
}

func closeReason(err error) string {
	if errors.Is(err, errStopping) {
		return errStopping.Error()
	}
	return "the session ended"
}

// consoleSend writes one message, for at most 15 s (a client that stopped
// reading). Not bounded by the session's context: coder/websocket closes
// the connection when a write's context ends while it still counts the
// write as in flight (until its own bookkeeping after the bytes went
// out), so a session stopped just after a write would lose its close
// frame (1001, why) to a bare EOF.
func (s *Server) consoleSend(ctx context.Context, conn *websocket.Conn, typ websocket.MessageType, b []byte) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	return conn.Write(wctx, typ, b)
}

func isWebSocket(r *http.Request) bool {
	return headerHas(r.Header, "Connection", "upgrade") && headerHas(r.Header, "Upgrade", "websocket")
}

func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// sameOrigin: a request without Origin is no browser's (the CLI); a
// browser's must come from the controller's own pages: the host it asked
// for, or the public URL's (behind a proxy that rewrites Host).
func (s *Server) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if p, err := url.Parse(s.publicURL); err == nil && p.Host != "" && strings.EqualFold(p.Host, u.Host) && p.Scheme == u.Scheme {
		return true
	}
	return false
}

// consoleToken is the token a browser offers as a subprotocol (see
// api.ConsoleTokenProtocolPrefix), on a WebSocket upgrade only.
func consoleToken(r *http.Request) (string, bool) {
	if !isWebSocket(r) {
		return "", false
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(p), api.ConsoleTokenProtocolPrefix); ok && t != "" {
				return t, true
			}
		}
	}
	return "", false
}
