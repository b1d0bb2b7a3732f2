package api

import "strings"

// The interactive console (GET /v1/nodes/{id}/console, admin only) is a
// WebSocket (RFC 6455) on the node's serial console (IPMI Serial-over-LAN):
//
//   - The client asks for the subprotocol ConsoleSubprotocol. A browser,
//     which cannot set an Authorization header on a WebSocket, offers its
//     token as a second subprotocol, ConsoleTokenProtocolPrefix+token; the
//     server answers with ConsoleSubprotocol only, so the token is never
//     echoed, and never travels in the URL, where proxies log it. Other
//     clients send Authorization: Bearer as usual.
//   - A browser's Origin must be the controller's own (same host, or
//     the host of its public URL): another site's page cannot open it
//     with a user's token.
//   - ?write=0 only watches; otherwise the session asks for the keyboard,
//     which the first session that asks holds while it lasts (the others
//     watch).
//   - The server's first message is a text message, a ConsoleHello; then
//     binary messages carry the console's raw output. The client's binary
//     (or text) messages are keystrokes, dropped for a watcher. Later text
//     messages from the server are ConsoleHello-shaped notices (Message).
//   - The session closes with a reason when the node's console ends, the
//     token is revoked or expires (checked every few seconds), or the
//     controller stops. Every session opening and closing is an event on
//     the node (console_opened, console_closed): who, when, writer or
//     watcher. Keystrokes are never recorded.
const (
	ConsoleSubprotocol         = "baremetal.console.v1"
	ConsoleTokenProtocolPrefix = "bearer."
)

// ConsoleTokenProtocol is the subprotocol carrying token, or "" when the
// token cannot be one (a subprotocol is an HTTP token: no spaces,
// separators or non-ASCII).
func ConsoleTokenProtocol(token string) string {
	if token == "" || strings.ContainsFunc(token, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r)
	}) {
		return ""
	}
	return ConsoleTokenProtocolPrefix + token
}

// ConsoleHello is the server's first message on a console WebSocket.
type ConsoleHello struct {
	NodeID   string `json:"node_id"`
	NodeName string `json:"node_name"`
	// Writer is whether this session has the console's keyboard; false:
	// it watches (it asked to, or another session has the keyboard).
	Writer bool `json:"writer"`
	// Message is for the user (why it watches, a notice).
	Message string `json:"message,omitempty"`
}
