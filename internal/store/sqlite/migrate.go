package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlite/internal/dbsqlc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// Migrations are NNNN_name.sql files, applied in version order, each in its
// own transaction together with its schema_migrations row. Never edit an
// applied file: add a new one.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrate applies the pending migrations on db (the writer).
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := store.LoadMigrations(migrationFS)
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at TEXT    NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}

	// A database migrated by a newer binary may hold tables this one does
	// not understand; refuse rather than run against them.
	var newest sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	if known := ms[len(ms)-1].Version; newest.Valid && int(newest.Int64) > known {
		return fmt.Errorf("sqlite: database schema version %d is newer than this binary's %d; upgrade the controller", newest.Int64, known)
	}

	for _, m := range ms {
		if err := applyMigration(ctx, db, m); err != nil {
			return fmt.Errorf("sqlite: migration %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m store.Migration) error {
	// The writer begins IMMEDIATE transactions, so the check below and the
	// DDL are atomic even against another process migrating the same file.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, sqlstore.Time(store.Now())); err != nil {
		return err
	}
	return tx.Commit()
}

// backfillBMCKeys runs store.BackfillBMCKeys in one transaction on db.
func backfillBMCKeys(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	defer tx.Rollback()
	q := dbsqlc.New(tx)
	if err := store.BackfillBMCKeys(ctx, binding.Queries(nil, q, q, q).Backfill(), nil); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: bmc key backfill: %w", err)
	}
	return nil
}
