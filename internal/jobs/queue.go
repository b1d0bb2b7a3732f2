package jobs

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// queue is the part of River's generic *river.Client[TTx] the runner uses,
// with the transaction type erased: the store hands out store.Tx, whose
// Native() is *sql.Tx on SQLite and pgx.Tx on PostgreSQL. One generic
// adapter serves both, so no worker knows which database it runs on.
type queue interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	InsertTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	InsertManyFastTx(ctx context.Context, tx store.Tx, params []river.InsertManyParams) (int, error)
	InsertMany(ctx context.Context, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	JobRetry(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobListTx(ctx context.Context, tx store.Tx, params *river.JobListParams) (*river.JobListResult, error)
	JobRetryTx(ctx context.Context, tx store.Tx, id int64) (*rivertype.JobRow, error)
	StopAndCancel(ctx context.Context) error
}

type riverQueue[TTx any] struct {
	*river.Client[TTx]
}

func (q riverQueue[TTx]) InsertTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	native, err := nativeTx[TTx](tx)
	if err != nil {
		return nil, fmt.Errorf("insert %s job: %w", args.Kind(), err)
	}
	return q.Client.InsertTx(ctx, native, args, opts)
}

func (q riverQueue[TTx]) InsertManyFastTx(ctx context.Context, tx store.Tx, params []river.InsertManyParams) (int, error) {
	native, err := nativeTx[TTx](tx)
	if err != nil {
		return 0, fmt.Errorf("insert jobs: %w", err)
	}
	return q.Client.InsertManyFastTx(ctx, native, params)
}

func (q riverQueue[TTx]) JobListTx(ctx context.Context, tx store.Tx, params *river.JobListParams) (*river.JobListResult, error) {
	native, err := nativeTx[TTx](tx)
	if err != nil {
		return nil, err
	}
	return q.Client.JobListTx(ctx, native, params)
}

func (q riverQueue[TTx]) JobRetryTx(ctx context.Context, tx store.Tx, id int64) (*rivertype.JobRow, error) {
	native, err := nativeTx[TTx](tx)
	if err != nil {
		return nil, err
	}
	return q.Client.JobRetryTx(ctx, native, id)
}

func nativeTx[TTx any](tx store.Tx) (TTx, error) {
	native, ok := tx.Native().(TTx)
	if !ok {
		return native, fmt.Errorf("store transaction is %T, River needs %T", tx.Native(), native)
	}
	return native, nil
}

// newQueue builds the River client on the store's own database handle, so
// jobs and the rows they act on commit in one transaction.
func newQueue(st store.Store, cfg *river.Config) (queue, error) {
	switch st.Dialect() {
	case "sqlite":
		db, ok := st.Native().(*sql.DB)
		if !ok {
			return nil, fmt.Errorf("sqlite store: native handle is %T, want *sql.DB", st.Native())
		}
		c, err := river.NewClient(riversqlite.New(db), cfg)
		if err != nil {
			return nil, fmt.Errorf("river client on sqlite: %w", err)
		}
		return riverQueue[*sql.Tx]{c}, nil
	case "postgres":
		pool, ok := st.Native().(*pgxpool.Pool)
		if !ok {
			return nil, fmt.Errorf("postgres store: native handle is %T, want *pgxpool.Pool", st.Native())
		}
		c, err := river.NewClient(riverpgxv5.New(pool), cfg)
		if err != nil {
			return nil, fmt.Errorf("river client on postgres: %w", err)
		}
		return riverQueue[pgx.Tx]{c}, nil
	default:
		return nil, fmt.Errorf("unsupported store dialect %q", st.Dialect())
	}
}

// argsNodeID is the predicate selecting jobs of one node in River's job
// list. `->>` with a bare key works on PostgreSQL's jsonb and on SQLite's
// JSONB blob (SQLite reads 'node_id' as '$.node_id').
const argsNodeID = "args ->> 'node_id' = @node_id"
