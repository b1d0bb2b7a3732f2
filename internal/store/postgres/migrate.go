package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// Migrations are NNNN_name.sql files, applied in version order, each in its
// own transaction together with its schema_migrations row. Never edit an
// applied file: add a new one.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrator keeps PostgreSQL's schema_migrations, on a connection that
// holds the migration advisory lock.
type migrator struct{ conn *pgx.Conn }

func (m migrator) Newest(ctx context.Context) (int, error) {
	if _, err := m.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     NOT NULL PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return 0, err
	}
	var newest *int
	if err := m.conn.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil || newest == nil {
		return 0, err
	}
	return *newest, nil
}

func (m migrator) Apply(ctx context.Context, mig store.Migration) error {
	tx, err := m.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, mig.Version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	// Exec without arguments uses the simple protocol, which runs a
	// multi-statement script.
	if _, err := tx.Exec(ctx, mig.SQL); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, mig.Version, mig.Name); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// backfillBMCKeys runs store.BackfillBMCKeys in one transaction on conn
// (which holds the migration lock, so replicas do not race each other).
func backfillBMCKeys(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := newQuerier(tx)
	if err := store.BackfillBMCKeys(ctx, sqlstore.New(dialect{}, nil, q, q, q).Backfill(), nil); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: bmc key backfill: %w", err)
	}
	return nil
}
