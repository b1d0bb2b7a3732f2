package ipmi

import (
	"log/slog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

func newTestLogger(b *testlog.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
