package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres/internal/dbsqlc"
)

// Migrations are NNNN_name.sql files, applied in version order, each in its
// own transaction together with its schema_migrations row. Never edit an
// applied file: add a new one.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrate applies the pending migrations on conn, which holds the
// migration advisory lock.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	ms, err := store.LoadMigrations(migrationFS)
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     NOT NULL PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}

	// A database migrated by a newer binary may hold tables this one does
	// not understand; refuse rather than run against them.
	var newest *int
	if err := conn.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	if known := ms[len(ms)-1].Version; newest != nil && *newest > known {
		return fmt.Errorf("postgres: database schema version %d is newer than this binary's %d; upgrade the controller", *newest, known)
	}

	for _, m := range ms {
		if err := applyMigration(ctx, conn, m); err != nil {
			return fmt.Errorf("postgres: migration %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m store.Migration) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	// Exec without arguments uses the simple protocol, which runs a
	// multi-statement script.
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
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
	q := dbsqlc.New(tx)
	if err := store.BackfillBMCKeys(ctx, binding.Queries(nil, q, q, q).Backfill(), nil); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: bmc key backfill: %w", err)
	}
	return nil
}
