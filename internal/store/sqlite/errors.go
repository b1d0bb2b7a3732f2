package sqlite

import (
	"context"
	"errors"
	"strings"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// dialect is SQLite's errors, as sqlstore asks about them.
type dialect struct{}

func (dialect) Name() string { return "sqlite" }

// Unreachable: another process held the lock past busy_timeout (a backup,
// a CLI), the disk failed or is full, or the file cannot be opened.
func (dialect) Unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff { // the primary code; extended codes add detail above it
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN:
		return true
	}
	return false
}

// uniqueColumns maps the columns SQLite names in a unique violation
// ("UNIQUE constraint failed: nodes.name") to the constraint's name,
// which SQLite does not report.
var uniqueColumns = map[string]string{
	"nodes.id":                          sqlstore.NodesPkey,
	"nodes.name":                        sqlstore.NodesNameKey,
	"nodes.bmc_key":                     sqlstore.NodesBMCKeyKey,
	"instances.id":                      sqlstore.InstancesPkey,
	"instances.project, instances.name": sqlstore.InstancesProjectNameKey,
	"tokens.id":                         sqlstore.TokensPkey,
	"tokens.name":                       sqlstore.TokensNameKey,
	"tokens.hash":                       sqlstore.TokensHashKey,
	"agent_sessions.token_hash":         sqlstore.AgentSessionsTokenHashKey,
	"idempotency_keys.token_id, idempotency_keys.key": sqlstore.IdempotencyKeysPkey,
	"ip_pools.id":   sqlstore.IPPoolsPkey,
	"ip_pools.name": sqlstore.IPPoolsNameKey,
	"ip_allocations.pool_id, ip_allocations.address": sqlstore.IPAllocationsAddressKey,
	"ip_allocations.pool_id, ip_allocations.ord":     sqlstore.IPAllocationsOrdKey,
}

func (dialect) UniqueViolation(err error) string {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return ""
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		// "... UNIQUE constraint failed: instances.project, instances.name (2067)"
		msg := se.Error()
		const failed = "constraint failed: "
		i := strings.LastIndex(msg, failed)
		if i < 0 {
			return ""
		}
		cols, _, _ := strings.Cut(msg[i+len(failed):], " (")
		return uniqueColumns[cols]
	}
	return ""
}

func (dialect) ForeignKeyViolation(err error) bool {
	var se *msqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

func wrap(op string, err error) error { return sqlstore.Wrap(dialect{}, op, err) }

// Classify returns err as store.Unavailable when it says the database
// cannot be reached, and unchanged otherwise (see store.Store).
func (s *Store) Classify(op string, err error) error { return sqlstore.Classify(dialect{}, op, err) }
