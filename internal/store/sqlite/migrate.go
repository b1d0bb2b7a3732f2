package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/sqlstore"
)

// Migrations are NNNN_name.sql files, applied in version order, each in its
// own transaction together with its schema_migrations row. Never edit an
// applied file: add a new one.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrator keeps SQLite's schema_migrations, on the writer.
type migrator struct{ db *sql.DB }

func (m migrator) Newest(ctx context.Context) (int, error) {
	if _, err := m.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at TEXT    NOT NULL
	) STRICT`); err != nil {
		return 0, err
	}
	var newest sql.NullInt64
	err := m.db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest)
	return int(newest.Int64), err
}

func (m migrator) Apply(ctx context.Context, mig store.Migration) error {
	// The writer begins IMMEDIATE transactions, so the check below and the
	// DDL are atomic even against another process migrating the same file.
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, mig.Version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, mig.SQL); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		mig.Version, mig.Name, sqlstore.Time(store.Now())); err != nil {
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
	q := newQuerier(tx)
	if err := store.BackfillBMCKeys(ctx, sqlstore.New(dialect{}, nil, q, q, q).Backfill(), nil); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: bmc key backfill: %w", err)
	}
	return nil
}
