package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/app"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

// TestRevokedBootstrapTokenStaysRevoked: --bootstrap-token creates the
// first admin token on a first start only. Revoked, it stays revoked
// across restarts with the same flag, and the log says the flag was
// ignored; left alone, it keeps working and the log says so quietly.
func TestRevokedBootstrapTokenStaysRevoked(t *testing.T) {
	t.Parallel()
	const bootstrap = "bmt_bootstrap-test-admin-token"
	dir := t.TempDir()
	start := func() (*app.App, *testlog.Buffer) {
		t.Helper()
		logs := &testlog.Buffer{}
		cfg := app.Defaults()
		cfg.Listen, cfg.DataDir, cfg.BootstrapToken = "127.0.0.1:0", dir, bootstrap
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		a, err := app.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a, logs
	}
	stop := func(a *app.App) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()

	a, _ := start()
	boot, err := a.Service.Authenticate(ctx, bootstrap)
	if err != nil || !boot.Admin() {
		t.Fatalf("first start: the bootstrap token does not authenticate an admin: %+v, %v", boot, err)
	}
	_, second, err := a.Service.CreateToken(ctx, boot, service.TokenInput{Name: "ops", Role: baremetal.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	stop(a)

	// A restart with the token still there: it works, nothing to warn of.
	a, logs := start()
	if _, err := a.Service.Authenticate(ctx, bootstrap); err != nil {
		t.Fatalf("restart: the bootstrap token stopped working: %v", err)
	}
	if !strings.Contains(logs.String(), "--bootstrap-token ignored") || strings.Contains(logs.String(), "level=WARN msg=\"--bootstrap-token") {
		t.Errorf("restart with the token present: want an INFO that the flag was ignored:\n%s", logs)
	}
	ops, err := a.Service.Authenticate(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Service.DeleteToken(ctx, ops, boot.TokenID); err != nil {
		t.Fatal(err)
	}
	stop(a)

	for i := 0; i < 2; i++ {
		a, logs = start()
		if _, err := a.Service.Authenticate(ctx, bootstrap); !baremetal.IsCode(err, baremetal.CodeUnauthorized) {
			t.Fatalf("restart %d: the revoked bootstrap token came back: %v", i+1, err)
		}
		if !strings.Contains(logs.String(), "level=WARN msg=\"--bootstrap-token ignored") {
			t.Errorf("restart %d: no warning that --bootstrap-token was ignored:\n%s", i+1, logs)
		}
		if strings.Contains(logs.String(), bootstrap) {
			t.Errorf("the token's secret is in the log:\n%s", logs)
		}
		if _, err := a.Service.Authenticate(ctx, second); err != nil {
			t.Fatalf("restart %d: the other admin token: %v", i+1, err)
		}
		stop(a)
	}
}
