// Package ledger is the only code that writes a node. The API's service
// (operators' requests, the OS's readiness callback) and the jobs (the
// controller's own BMC work) both change nodes through it, so every change
// is read fresh inside its transaction, retried once per concurrent
// writer, checked against the product's rules, and told in events by the
// same diff whoever made it.
//
// Rules enforced here, by actor:
//
//   - Maintenance belongs to operators (a human decision): a change made by any
//     other actor that touches maintenance or its reason is refused.
//   - Every changed field is an event, with old and new values (never a
//     password), naming the actor.
//
// Writers hold a transaction only for reads and writes of the store: BMC
// calls happen before, so SQLite's single writer is never held for a
// BMC's timeout.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Actor is who makes a change, as events name it.
type Actor string

// Controller is the controller's own work: jobs, the power sync.
const Controller Actor = baremetal.ActorController

// Token is an operator or member acting through the API with a token.
func Token(id string) Actor { return Actor("token:" + id) }

// NamedToken is Token with the token's name, which says who: "token:alice
// (<id>)". The id stays, as a name is free again once its token is revoked.
func NamedToken(id, name string) Actor {
	if name == "" {
		return Token(id) // a token made before names were required
	}
	return Actor("token:" + name + " (" + id + ")")
}

// Instance is an instance's booted OS (its readiness callback).
func Instance(id string) Actor { return Actor("instance:" + id) }

// Operator reports whether a is a person acting through the API, the only
// kind of actor allowed to change maintenance.
func (a Actor) Operator() bool { return strings.HasPrefix(string(a), "token:") }

// Change is what a mutation wants recorded besides the field diff.
type Change struct {
	// Reason is the message of the provision_state event.
	Reason string
	// Kind is the type of the provision_state event ("provision_state"
	// when empty); e.g. "instance_deleted" when the deletion is the news.
	Kind string
	// Events are extra events (the outcome of a power action, say); an
	// event without an actor gets the mutation's.
	Events []*baremetal.Event
}

// Func changes n, read fresh inside tx. It may use tx to read and write
// related rows (the instance), never the Store (SQLite has one writer
// connection, held by tx). Returning ErrSkip ends the mutation without
// writing anything.
type Func func(tx store.Tx, n *baremetal.Node, c *Change) error

// ErrSkip tells the ledger that the mutation found nothing to do (the node
// moved on meanwhile). Update returns no error for it; in InTx it is the
// caller's to handle.
var ErrSkip = errors.New("ledger: nothing to write")

// maxConflictRetries bounds the reload-and-retry loop of optimistic
// concurrency. A conflict means another writer changed the row between our
// read and our write; with a fresh read inside a short transaction that is
// rare, so a handful of retries is plenty.
const maxConflictRetries = 8

// Ledger writes nodes to a store.
type Ledger struct {
	st  store.Store
	log *slog.Logger
	now func() time.Time
}

// New returns a ledger over st that logs faults raised and cleared to log.
func New(st store.Store, log *slog.Logger) *Ledger {
	if log == nil {
		log = slog.Default()
	}
	return &Ledger{st: st, log: log, now: time.Now}
}

// Tx is a store transaction whose node writes go through the ledger. Its
// embedded store.Tx serves everything else (instances, jobs, reads); a
// test in this package keeps node writes out of every other package.
type Tx struct {
	store.Tx
	l      *Ledger
	faults []noted
}

type noted struct {
	n *baremetal.Node
	e *baremetal.Event
}

// InTx runs fn in one store transaction, again on a fresh transaction when
// a concurrent writer made a version conflict (a client's If-Match is a
// precondition error, not retried), and logs the faults the committed
// transaction raised or cleared.
func (l *Ledger) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	return Retry(ctx, func() error { return l.Once(ctx, fn) })
}

// Once is InTx without the retry, for callers that read outside the
// transaction and retry both with Retry themselves.
func (l *Ledger) Once(ctx context.Context, fn func(tx *Tx) error) error {
	var faults []noted
	err := l.st.InTx(ctx, func(stx store.Tx) error {
		tx := &Tx{Tx: stx, l: l}
		err := fn(tx)
		faults = tx.faults
		return err
	})
	if err == nil {
		l.logFaults(ctx, faults)
	}
	return err
}

// Update applies fn to node id in a transaction of its own (see InTx) and
// returns the node as written, or as read when nothing changed or fn
// returned ErrSkip.
func (l *Ledger) Update(ctx context.Context, id string, actor Actor, fn Func) (*baremetal.Node, error) {
	var out *baremetal.Node
	err := l.InTx(ctx, func(tx *Tx) error {
		n, _, err := tx.Mutate(ctx, id, actor, fn)
		out = n
		return err
	})
	switch {
	case err == nil, errors.Is(err, ErrSkip):
		return out, nil
	default:
		return out, fmt.Errorf("update node %s: %w", id, err)
	}
}

// UpdateRead is Update of a node the caller read a moment ago outside any
// transaction (a job that read it, then called its BMC): fn runs on a
// copy of n and the write is version-checked against that read, so the
// transaction makes no read of its own, which on SQLite is time on the
// one writer that every change waits for. When the node changed
// meanwhile, the write is a version conflict and UpdateRead falls back to
// Update: fn runs again, on a fresh read inside the transaction. n itself
// is not changed.
func (l *Ledger) UpdateRead(ctx context.Context, n *baremetal.Node, actor Actor, fn Func) (*baremetal.Node, error) {
	var out *baremetal.Node
	err := l.Once(ctx, func(tx *Tx) error {
		read := *n
		m, _, err := tx.Apply(ctx, &read, actor, fn)
		out = m
		return err
	})
	switch {
	case versionConflict(err):
		return l.Update(ctx, n.ID, actor, fn)
	case err == nil, errors.Is(err, ErrSkip):
		return out, nil
	default:
		return out, fmt.Errorf("update node %s: %w", n.ID, err)
	}
}

// Retry runs fn again when it fails on a version conflict caused by a
// concurrent writer, after a short random sleep that spreads writers
// racing on one row. Callers that read outside a transaction and write
// version-checked inside one (to keep SQLite's writer free for the writes)
// wrap both in it.
func Retry(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if attempt >= maxConflictRetries || !versionConflict(err) {
			return err
		}
		d := time.Duration(attempt+1) * time.Duration(1+rand.Int64N(int64(5*time.Millisecond)))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func versionConflict(err error) bool {
	return baremetal.IsCode(err, baremetal.CodeConflict) && baremetal.ErrorField(err) == "version"
}

// Mutate is one read-modify-write of node id (or name) inside tx. It
// returns the node (as written; as read when fn changed nothing or failed)
// and whether it wrote. The diff of every field becomes events naming
// actor.
func (tx *Tx) Mutate(ctx context.Context, id string, actor Actor, fn Func) (*baremetal.Node, bool, error) {
	n, err := tx.GetNode(ctx, id)
	if err != nil {
		return nil, false, err
	}
	return tx.Apply(ctx, n, actor, fn)
}

// Apply is Mutate of a node the caller has just read in tx (to choose it,
// say): the write is version-checked against that read, so a concurrent
// writer makes it a conflict, which InTx retries from the start.
func (tx *Tx) Apply(ctx context.Context, n *baremetal.Node, actor Actor, fn Func) (*baremetal.Node, bool, error) {
	before := *n
	var c Change
	if err := fn(tx.Tx, n, &c); err != nil {
		return &before, false, err
	}
	if !actor.Operator() && (n.Maintenance != before.Maintenance || n.MaintenanceReason != before.MaintenanceReason) {
		return &before, false, fmt.Errorf("internal error: %s tried to change maintenance of node %s; only an operator may", actor, before.Name)
	}
	now := tx.l.now()
	events := append(Diff(&before, n, &c, now), c.Events...)
	changed := !Same(&before, n)
	if !changed && len(events) == 0 {
		return n, false, nil
	}
	if changed {
		if err := tx.UpdateNode(ctx, n); err != nil {
			return n, false, err
		}
	}
	if err := tx.insertEvents(ctx, n, actor, now, events); err != nil {
		return n, false, err
	}
	return n, changed, nil
}

// Enroll inserts a new node and its "enrolled" event.
func (tx *Tx) Enroll(ctx context.Context, n *baremetal.Node, actor Actor, msg string) error {
	if !actor.Operator() && n.Maintenance {
		return fmt.Errorf("internal error: %s tried to enroll node %s in maintenance; only an operator may", actor, n.Name)
	}
	if err := tx.InsertNode(ctx, n); err != nil {
		return err
	}
	return tx.insertEvents(ctx, n, actor, tx.l.now(), []*baremetal.Event{{Type: "enrolled",
		Field: "provision_state", New: string(n.ProvisionState), Message: msg}})
}

// Remove deletes node n's record (version-checked); its events go with it.
func (tx *Tx) Remove(ctx context.Context, n *baremetal.Node) error {
	return tx.DeleteNode(ctx, n.ID, n.Version)
}

// Note records events about node n that change none of its fields (a
// power action requested, say).
func (tx *Tx) Note(ctx context.Context, n *baremetal.Node, actor Actor, events ...*baremetal.Event) error {
	return tx.insertEvents(ctx, n, actor, tx.l.now(), events)
}

func (tx *Tx) insertEvents(ctx context.Context, n *baremetal.Node, actor Actor, now time.Time, events []*baremetal.Event) error {
	for _, e := range events {
		e.NodeID = n.ID
		if e.Actor == "" {
			e.Actor = string(actor)
		}
		if e.Time.IsZero() {
			e.Time = now
		}
	}
	if err := tx.InsertEvents(ctx, events); err != nil {
		return fmt.Errorf("insert events of node %s: %w", n.Name, err)
	}
	for _, e := range events {
		if e.Type == "fault" {
			tx.faults = append(tx.faults, noted{n, e})
		}
	}
	return nil
}

// logFaults tells the controller's log of faults raised and cleared, once
// each (after the commit, so a retried transaction does not say it twice):
// an operator reading the log learns that a BMC went away or came back
// without polling the API. Raised is WARN, cleared INFO.
func (l *Ledger) logFaults(ctx context.Context, faults []noted) {
	for _, f := range faults {
		n, e := f.n, f.e
		if e.New == string(baremetal.FaultNone) {
			l.log.InfoContext(ctx, "node fault cleared", "node", n.Name, "fault", e.Old, "message", e.Message)
			continue
		}
		l.log.WarnContext(ctx, "node fault", "node", n.Name, "fault", e.New, "was", e.Old,
			"provision_state", n.ProvisionState, "message", e.Message)
	}
}

// Same reports whether a and b hold the same data, ignoring the
// bookkeeping the store maintains.
func Same(a, b *baremetal.Node) bool {
	x, y := *a, *b
	x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
	x.Version, y.Version = 0, 0
	return reflect.DeepEqual(x, y)
}
