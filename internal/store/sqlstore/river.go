package sqlstore

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
)

// MigrateRiver applies River's pending migrations through driver (the
// dialect's River driver on the database the store uses); d names the
// dialect in errors. Running it again is a no-op.
func MigrateRiver[TTx any](ctx context.Context, d Dialect, driver riverdriver.Driver[TTx]) error {
	// Warnings only: a line per applied migration on every fresh test
	// database is noise.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet})
	if err != nil {
		return fmt.Errorf("%s: river migrations: %w", d.Name(), err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("%s: river migrations: %w", d.Name(), err)
	}
	return nil
}
