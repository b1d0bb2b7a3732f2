package app_test

import (
	"cmp"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/app"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
)

func TestParseCleanEraseClass(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "storage=full, scratch=off,gpu=metadata", want: map[string]string{"storage": "full", "scratch": "", "gpu": "metadata"}},
		{in: "storage", wantErr: "want class=mode pairs"},
		{in: "storage=wipe", wantErr: `storage="wipe": want metadata, full or off`},
		{in: "storage=full,storage=off", wantErr: "storage is given twice"},
		{in: "Bad Class=full", wantErr: "--clean-erase-class"},
	} {
		got, err := app.ParseCleanEraseClass(c.in)
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%q: error %v, want %q", c.in, err, c.wantErr)
		case c.wantErr == "" && (err != nil || !maps.Equal(got, c.want)):
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

// Every setting has a name of its own and help, its default is of its
// variable's type (Defaults would panic), and the defaults pass Validate.
func TestSettingsTable(t *testing.T) {
	var c app.Config
	seen := map[string]bool{}
	for _, s := range c.Settings() {
		if s.Name == "" || strings.HasPrefix(s.Name, "-") || seen[s.Name] {
			t.Errorf("setting %q: want a flag's name (no dashes), once", s.Name)
		}
		seen[s.Name] = true
		if s.Help == "" {
			t.Errorf("setting %s has no help", s.Name)
		}
		if strings.Contains(cmp.Or(s.Doc, s.Help)+s.DefaultDoc, "|") {
			t.Errorf("setting %s: a | would split its README table cell", s.Name)
		}
	}
	if err := app.Defaults().Validate(); err != nil {
		t.Errorf("the defaults do not pass Validate: %v", err)
	}
}

// The controller's defaults are its settings table's; jobs keeps its own
// for library callers (a zero Config field), which must say the same.
func TestDefaultsAreTheJobs(t *testing.T) {
	a, j := app.Defaults(), jobs.Defaults()
	for flag, v := range map[string][2]any{
		"power-sync-interval":  {a.PowerSyncInterval, j.PowerSyncInterval},
		"power-sync-workers":   {a.PowerSyncWorkers, j.PowerSyncWorkers},
		"bmc-timeout":          {a.BMCTimeout, j.BMCTimeout},
		"power-change-timeout": {a.PowerChangeTimeout, j.PowerChangeTimeout},
		"media-settle":         {a.MediaSettle, j.MediaSettle},
		"fault-threshold":      {a.FaultThreshold, j.FaultThreshold},
		"max-backoff":          {a.MaxBackoff, j.MaxBackoff},
		"workers":              {a.Workers, j.Workers},
		"agent-timeout":        {a.AgentTimeout, j.AgentTimeout},
	} {
		if v[0] != v[1] {
			t.Errorf("--%s defaults to %v, jobs.Config to %v", flag, v[0], v[1])
		}
	}
}

// Validate names every flag whose value could never work, all at once.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		set  func(*app.Config)
		want []string
	}{
		{func(c *app.Config) { c.BMCTimeout, c.MaxBackoff = 0, -time.Second },
			[]string{"--bmc-timeout must be positive, got 0s", "--max-backoff must be positive, got -1s"}},
		{func(c *app.Config) { c.PowerChangeTimeout, c.MediaSettle = 0, 0 },
			[]string{"--power-change-timeout must be positive", "--media-settle must be positive"}},
		{func(c *app.Config) { c.PowerSyncInterval = -time.Second }, []string{"--power-sync-interval must not be negative, got -1s"}},
		{func(c *app.Config) {
			c.Workers, c.PowerSyncWorkers, c.FaultThreshold, c.RedfishMaxConnections = 0, -1, 0, 0
		},
			[]string{"--workers must be at least 1, got 0", "--power-sync-workers must be at least 1, got -1", "--fault-threshold must be at least 1", "--redfish-max-connections must be at least 1"}},
		{func(c *app.Config) { c.CleanErase = "wipe" }, []string{`--clean-erase "wipe": want metadata, full or off`}},
		{func(c *app.Config) { c.CleanEraseClass = "storage=wipe" }, []string{`--clean-erase-class storage="wipe"`}},
		{func(c *app.Config) { c.ImageURLAllow, c.ImageURLDeny = "127.0.0.1/33", "banana" },
			[]string{`--image-url-allow "127.0.0.1/33"`, `--image-url-deny "banana"`}},
		{func(c *app.Config) { c.TLSKeyFile = "key.pem" }, []string{"--tls-cert-file and --tls-key-file go together"}},
		{func(c *app.Config) { c.InspectOnEnroll, c.AgentNetboot = true, true },
			[]string{"--inspect-on-enroll needs --agent-kernel", "--agent-netboot needs --agent-kernel"}},
	} {
		cfg := app.Defaults()
		c.set(&cfg)
		err := cfg.Validate()
		for _, want := range c.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Validate: %v, want %q", err, want)
			}
		}
	}
	// Zero turns the power sync off; "" is no erase (a Config's zero).
	cfg := app.Defaults()
	cfg.PowerSyncInterval, cfg.CleanErase = 0, ""
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// A setting that could never work stops Start before it creates or opens
// anything: no data dir, no secret key, no database.
func TestStartRefusesBadSettingsFirst(t *testing.T) {
	for name, set := range map[string]func(*app.Config){
		"clean-erase":       func(c *app.Config) { c.CleanErase = "wipe" },
		"clean-erase-class": func(c *app.Config) { c.CleanEraseClass = "storage" },
		"inspect-on-enroll": func(c *app.Config) { c.InspectOnEnroll = true },
		"workers":           func(c *app.Config) { c.Workers = 0 },
	} {
		cfg := app.Defaults()
		cfg.Listen, cfg.DataDir = "127.0.0.1:0", filepath.Join(t.TempDir(), "data")
		cfg.Logger = slog.New(slog.DiscardHandler)
		set(&cfg)
		a, err := app.Start(t.Context(), cfg)
		if err == nil {
			_ = a.Stop(t.Context())
			t.Errorf("--%s: started", name)
			continue
		}
		if !strings.Contains(err.Error(), "--"+name) {
			t.Errorf("--%s: %v, want an error naming the flag", name, err)
		}
		if _, err := os.Stat(cfg.DataDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("--%s: the data dir was created (%v)", name, err)
		}
	}
}
