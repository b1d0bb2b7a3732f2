package storetest

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// What each store hands River: tests of one dialect check its own types
// with these; the conformance suite (Run) does not depend on them.

// NativeHandles checks that s.Native() is a DB and a transaction's
// Native() a TX: the handles River's driver for the dialect takes.
func NativeHandles[DB, TX any](t *testing.T, s store.Store) DB {
	t.Helper()
	db, ok := s.Native().(DB)
	if !ok {
		t.Fatalf("Native() is %T, want %T", s.Native(), db)
	}
	err := s.InTx(t.Context(), func(tx store.Tx) error {
		if got, ok := tx.Native().(TX); !ok {
			t.Errorf("Tx.Native() is %T, want %T", tx.Native(), got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

type riverArgs struct {
	NodeID string `json:"node_id"`
}

func (riverArgs) Kind() string { return "storetest" }

// RiverInsertTx checks that River shares the store's transactions: a job
// inserted with InsertTx commits and rolls back with the store's own rows.
func RiverInsertTx(t *testing.T, s store.Store) {
	t.Helper()
	switch db := s.Native().(type) {
	case *sql.DB:
		riverInsertTx(t, s, riversqlite.New(db))
	case *pgxpool.Pool:
		riverInsertTx(t, s, riverpgxv5.New(db))
	default:
		t.Fatalf("unknown native handle %T", db)
	}
}

func riverInsertTx[TX any](t *testing.T, s store.Store, driver riverdriver.Driver[TX]) {
	t.Helper()
	ctx := t.Context()
	client, err := river.NewClient(driver, &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(name string, fail error) error {
		return s.InTx(ctx, func(tx store.Tx) error {
			n := &baremetal.Node{Name: name, Driver: baremetal.DriverRedfish, ProvisionState: baremetal.StateEnroll}
			if err := tx.InsertNode(ctx, n); err != nil {
				return err
			}
			if _, err := client.InsertTx(ctx, tx.Native().(TX), riverArgs{NodeID: n.ID}, nil); err != nil {
				return err
			}
			return fail
		})
	}
	boom := errors.New("boom")
	if err := insert("rolled-back", boom); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if err := insert("committed", nil); err != nil {
		t.Fatal(err)
	}
	if jobs := rawCount(t, s, `SELECT count(*) FROM river_job`); jobs != 1 {
		t.Errorf("%d jobs, want 1 (the rolled-back one must be gone)", jobs)
	}
	if _, err := s.GetNode(ctx, "rolled-back"); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Errorf("rolled-back node: %v", err)
	}
}
