package service_test

import (
	"context"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// TestNewBMCSettingsCountFailuresAnew: the failures counted for a node's
// old BMC settings are not the new ones': an update of the BMC sets the
// count back to 0 (a client waiting for the node reads it to tell
// credentials the BMC keeps refusing, and must not blame a corrected
// password for the old one), while the fault stays until a success. Any
// other update keeps the count.
func TestNewBMCSettingsCountFailuresAnew(t *testing.T) {
	for name, open := range map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			svc := service.New(st, &countingJobs{}, nil)
			n := enrollAvailable(t, st, svc, "refused")
			n.ProvisionState, n.Fault, n.BMCFailures, n.LastError = baremetal.StateEnroll, baremetal.FaultBMCAuthFailed, 3, "bmc login: auth: 401"
			if err := st.UpdateNode(ctx, n); err != nil {
				t.Fatal(err)
			}
			update := func(change func(*service.NodeSpec)) *baremetal.Node {
				t.Helper()
				got, err := svc.UpdateNode(ctx, admin, n.ID, 0, func(cur *baremetal.Node) (service.NodeSpec, error) {
					spec := service.SpecOf(cur)
					change(&spec)
					return spec, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			got := update(func(s *service.NodeSpec) { s.ResourceClass = "other" })
			if got.BMCFailures != 3 {
				t.Errorf("after a new resource class: %d failures; want the 3 counted", got.BMCFailures)
			}
			got = update(func(s *service.NodeSpec) { s.BMC.Password = "corrected" })
			if got.BMCFailures != 0 || got.Fault != baremetal.FaultBMCAuthFailed {
				t.Errorf("after a new password: %d failures, fault %q; want 0, and the fault until a success", got.BMCFailures, got.Fault)
			}
		})
	}
}
