package app_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/app"
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
