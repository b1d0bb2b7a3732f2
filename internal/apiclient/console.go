package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Console is an open interactive console of a node (GET
// /v1/nodes/{id}/console, admin only): Hello says whether it has the
// keyboard; Read returns the console's raw output, Write sends keystrokes.
type Console struct {
	Hello api.ConsoleHello
	conn  *websocket.Conn
}

// DialConsole opens the node's console; write asks for the keyboard (the
// first session that asks has it; the others watch).
func (c *Client) DialConsole(ctx context.Context, idOrName string, write bool) (*Console, error) {
	u := "ws" + strings.TrimPrefix(c.base, "http") + "/v1/nodes/" + escape(idOrName) + "/console"
	if !write {
		u += "?write=0"
	}
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	h.Set("User-Agent", c.rc.Header.Get("User-Agent"))
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPClient:   c.http,
		HTTPHeader:   h,
		Subprotocols: []string{api.ConsoleSubprotocol},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			// The library keeps up to 1 KiB of the refusal's body.
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			}
			return nil, &APIError{Method: http.MethodGet, Path: "/v1/nodes/" + escape(idOrName) + "/console", Problem: problemOf(resp.StatusCode, body)}
		}
		return nil, fmt.Errorf("console of node %s: %w", idOrName, cleanTransportError(err))
	}
	conn.SetReadLimit(1 << 20)
	typ, b, err := conn.Read(ctx)
	if err != nil || typ != websocket.MessageText {
		_ = conn.CloseNow()
		if err == nil {
			err = errors.New("the first message is not the greeting")
		}
		return nil, fmt.Errorf("console of node %s: %w", idOrName, err)
	}
	con := &Console{conn: conn}
	if err := json.Unmarshal(b, &con.Hello); err != nil {
		_ = conn.CloseNow()
		return nil, fmt.Errorf("console of node %s: greeting: %w", idOrName, err)
	}
	return con, nil
}

// ConsoleNotice is Read's error for a text message: a notice from the
// controller (the console reopening, say), not console output.
type ConsoleNotice struct{ api.ConsoleHello }

func (n *ConsoleNotice) Error() string { return n.Message }

// ConsoleClosed is Read's error when the controller closed the session:
// Reason says why (the console ended, the token was revoked).
type ConsoleClosed struct {
	Code   int
	Reason string
}

func (e *ConsoleClosed) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("the console closed (%d)", e.Code)
	}
	return "the console closed: " + e.Reason
}

// Read returns the next output of the console, a *ConsoleNotice for a
// notice, or a *ConsoleClosed when the controller closed the session.
func (c *Console) Read(ctx context.Context) ([]byte, error) {
	typ, b, err := c.conn.Read(ctx)
	if err != nil {
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return nil, &ConsoleClosed{Code: int(ce.Code), Reason: ce.Reason}
		}
		return nil, err
	}
	if typ == websocket.MessageText {
		n := &ConsoleNotice{}
		if json.Unmarshal(b, &n.ConsoleHello) != nil {
			n.Message = string(bytes.ToValidUTF8(b, nil))
		}
		return nil, n
	}
	return b, nil
}

// Write sends keystrokes (dropped by the controller for a watcher).
func (c *Console) Write(ctx context.Context, p []byte) error {
	return c.conn.Write(ctx, websocket.MessageBinary, p)
}

// Close ends the session.
func (c *Console) Close() error {
	return c.conn.Close(websocket.StatusNormalClosure, "")
}

func problemOf(status int, body []byte) api.Problem {
	var p api.Problem
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' && json.Unmarshal(body, &p) == nil && (p.Code != "" || p.Detail != "") {
		p.Status = status
		return p
	}
	p = api.Problem{Status: status, Title: http.StatusText(status)}
	if excerpt := printable(body, 200); excerpt != "" {
		p.Detail = excerpt
	}
	return p
}
