package jobs

import (
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// A MaxBackoff below RetryBase's default caps the first retry instead of
// refusing the Config: a controller with --max-backoff 1s (or a test)
// sets no RetryBase of its own.
func TestSmallMaxBackoffCapsTheDefaultRetryBase(t *testing.T) {
	c := Config{Store: struct{ store.Store }{}, BMC: echoOpener{}, MaxBackoff: time.Second}.withDefaults()
	if c.RetryBase != time.Second {
		t.Errorf("RetryBase = %s with MaxBackoff 1s, want 1s", c.RetryBase)
	}
	if err := c.validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	if d := (Config{}).withDefaults().RetryBase; d != 2*time.Second {
		t.Errorf("default RetryBase = %s, want 2s", d)
	}
}
