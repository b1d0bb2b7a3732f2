package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// dialect is PostgreSQL's errors, as sqlstore asks about them. The
// constraint names sqlstore knows are the migrations' own.
type dialect struct{}

func (dialect) Name() string { return "postgres" }

// Unreachable: the server could not be reached, dropped the connection,
// or is shutting down or starting up.
func (dialect) Unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection_exception
			return true
		case pe.Code == "57P01", // admin_shutdown: pg_ctl stop -m fast
			pe.Code == "57P02", // crash_shutdown
			pe.Code == "57P03", // cannot_connect_now: starting up or shutting down
			pe.Code == "53300": // too_many_connections
			return true
		}
		return false // the server answered: the statement itself failed
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	return errors.Is(err, pgconn.ErrConnClosed) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (dialect) UniqueViolation(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe.ConstraintName
	}
	return ""
}

func (dialect) ForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

func wrap(op string, err error) error { return sqlstore.Wrap(dialect{}, op, err) }

// Classify returns err as store.Unavailable when it says the database
// cannot be reached, and unchanged otherwise (see store.Store).
func (s *Store) Classify(op string, err error) error { return sqlstore.Classify(dialect{}, op, err) }
