package ledger_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

// BenchmarkVerifyLikeUpdate is the write of a verify job: one node's
// power state, properties and provision state change in one update, three
// events. On PostgreSQL its cost is mostly round trips.
//
//	go test -run '^$' -bench VerifyLikeUpdate -benchtime 500x ./internal/ledger
func BenchmarkVerifyLikeUpdate(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		open := map[string]func(testing.TB) store.Store{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres}[name]
		b.Run(name, func(b *testing.B) {
			st := open(b)
			l := ledger.New(st, slog.New(slog.DiscardHandler))
			ctx := context.Background()
			n := &baremetal.Node{Name: "bench", Driver: baremetal.DriverRedfish, PowerState: baremetal.PowerUnknown,
				ProvisionState: baremetal.StateEnroll,
				BMC:            baremetal.BMC{Address: "https://10.0.0.1", Username: "admin", Password: "s3cret-pw"}}
			if err := l.InTx(ctx, func(tx *ledger.Tx) error { return tx.Enroll(ctx, n, ledger.Token("t1"), "enrolled") }); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				_, err := l.Update(ctx, n.ID, ledger.Controller, func(_ store.Tx, n *baremetal.Node, c *ledger.Change) error {
					n.PowerState, n.Properties.CPUs = baremetal.PowerOff, 8+i%2
					n.ProvisionState, c.Reason = baremetal.StateAvailable, "BMC verified"
					if i%2 == 1 {
						n.PowerState, n.ProvisionState = baremetal.PowerOn, baremetal.StateEnroll
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/update")
		})
	}
}
