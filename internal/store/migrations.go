package store

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned schema change: a migrations/NNNN_name.sql
// file embedded by a dialect's package.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads migrations/*.sql from fsys in version order and
// rejects misnamed files and duplicate versions. Each dialect applies them
// its own way (transaction and schema_migrations bookkeeping differ).
func LoadMigrations(fsys fs.FS) ([]Migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, f := range files {
		base := strings.TrimSuffix(path.Base(f), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s: want NNNN_name.sql", f)
		}
		body, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("two migrations with version %d", ms[i].Version)
		}
	}
	return ms, nil
}

// Migrator is how a dialect keeps track of its applied migrations (its
// schema_migrations table).
type Migrator interface {
	// Newest creates the table of applied migrations when missing and
	// returns the newest version in it, 0 when none.
	Newest(ctx context.Context) (int, error)
	// Apply applies m and records it, in one transaction, unless it was
	// applied already.
	Apply(ctx context.Context, m Migration) error
}

// Migrate applies the pending migrations in fsys (LoadMigrations) with m;
// dialect prefixes errors. A database migrated by a newer binary may hold
// tables this one does not understand: it is refused rather than used.
func Migrate(ctx context.Context, dialect string, fsys fs.FS, m Migrator) error {
	ms, err := LoadMigrations(fsys)
	if err != nil {
		return fmt.Errorf("%s: migrations: %w", dialect, err)
	}
	newest, err := m.Newest(ctx)
	if err != nil {
		return fmt.Errorf("%s: migrations: %w", dialect, err)
	}
	if known := ms[len(ms)-1].Version; newest > known {
		return fmt.Errorf("%s: database schema version %d is newer than this binary's %d; upgrade the controller", dialect, newest, known)
	}
	for _, mg := range ms {
		if err := m.Apply(ctx, mg); err != nil {
			return fmt.Errorf("%s: migration %04d_%s: %w", dialect, mg.Version, mg.Name, err)
		}
	}
	return nil
}
