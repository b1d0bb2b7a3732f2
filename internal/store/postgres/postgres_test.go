package postgres_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/postgres"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return storetest.OpenPostgres(t) })
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	if _, err := postgres.Open(t.Context(), url, nil); err == nil {
		t.Error("Open accepted a nil Box")
	}
	_, err := postgres.Open(t.Context(), "postgres://user:hunter2@[::1", storetest.Box())
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open of a malformed URL: %v", err)
	}
}

func TestNativeHandles(t *testing.T) {
	t.Parallel()
	storetest.NativeHandles[*pgxpool.Pool, pgx.Tx](t, storetest.OpenPostgres(t))
}

// River shares the database: a job inserted with InsertTx commits and
// rolls back with the store's own rows.
func TestRiverInsertTx(t *testing.T) {
	t.Parallel()
	storetest.RiverInsertTx(t, storetest.OpenPostgres(t))
}

// Replicas starting together on a new database migrate it once, without
// errors: the advisory lock makes them take turns.
func TestConcurrentOpen(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	const replicas = 3
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), url, storetest.Box())
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// A database migrated by a newer binary is refused, not used.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	s, err := postgres.Open(t.Context(), url, storetest.Box())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Native().(*pgxpool.Pool).Exec(t.Context(),
		`INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := postgres.Open(t.Context(), url, storetest.Box()); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer schema: %v", err)
	}
}

func BenchmarkGetNode(b *testing.B) {
	storetest.BenchGetNode(b, storetest.OpenPostgres(b))
}

func BenchmarkListNodesPage(b *testing.B) {
	storetest.BenchListNodesPage(b, storetest.OpenPostgres(b))
}

func BenchmarkUpdateNode(b *testing.B) {
	storetest.BenchUpdateNode(b, storetest.OpenPostgres(b))
}

// BenchmarkAllocateAddress60k allocates from a /16 holding 60 000
// addresses, filled from its start (storetest.BenchAllocateLargePool).
func BenchmarkAllocateAddress60k(b *testing.B) {
	storetest.BenchAllocateLargePool(b, storetest.OpenPostgres(b), 60000)
}
