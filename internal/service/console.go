package service

import (
	"context"
	"fmt"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
)

// Event types of interactive console sessions: who opened a node's
// console (the event's actor), when (its time), with the keyboard or
// watching, and when it closed and why. Keystrokes are never recorded.
const (
	EventConsoleOpened = "console_opened"
	EventConsoleClosed = "console_closed"
)

// NodeConsole checks that c may open the node's interactive console (an
// admin: a console shows and types what the machine does, a login
// prompt's answers included) and returns the node.
func (s *Service) NodeConsole(ctx context.Context, c Caller, idOrName string) (*baremetal.Node, error) {
	if err := requireAdmin(c, "open node consoles"); err != nil {
		return nil, err
	}
	return s.store.GetNode(ctx, idOrName)
}

// consoleRole is how events name a session's part.
func consoleRole(writer bool) string {
	if writer {
		return "with the keyboard"
	}
	return "watching (read-only)"
}

// ConsoleOpened records on the node that c opened its interactive
// console, with the keyboard (writer) or watching.
func (s *Service) ConsoleOpened(ctx context.Context, c Caller, n *baremetal.Node, writer bool) error {
	return s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		return tx.Note(ctx, n, c.Actor(), &baremetal.Event{Type: EventConsoleOpened,
			Message: "interactive console opened, " + consoleRole(writer)})
	})
}

// ConsoleClosed records that c's console session ended after d, and why.
func (s *Service) ConsoleClosed(ctx context.Context, c Caller, n *baremetal.Node, writer bool, d time.Duration, why string) error {
	msg := fmt.Sprintf("interactive console closed after %s, %s", d.Round(time.Second), consoleRole(writer))
	if why != "" {
		msg += ": " + why
	}
	return s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		return tx.Note(ctx, n, c.Actor(), &baremetal.Event{Type: EventConsoleClosed, Message: msg})
	})
}

// TokenStillValid checks, bypassing the authentication cache, that c's
// token still exists and has not expired: a long-lived session (a
// console) calls it now and then and ends when the token is revoked.
func (s *Service) TokenStillValid(ctx context.Context, c Caller) error {
	tok, err := s.store.GetToken(ctx, c.TokenID)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return baremetal.Errorf(baremetal.CodeUnauthorized, "the token was revoked")
	}
	if err != nil {
		return err
	}
	if tok.Expired(s.now()) {
		return baremetal.Errorf(baremetal.CodeUnauthorized, "the token expired")
	}
	return nil
}
