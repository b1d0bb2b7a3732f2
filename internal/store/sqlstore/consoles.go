package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

func (q Queries) ClaimConsole(ctx context.Context, nodeID, holder string, until time.Time) (bool, error) {
	if !store.Storable(nodeID, holder) {
		return false, store.NotFound("node", nodeID)
	}
	u := Time(store.Timestamp(until))
	n, err := q.w.ClaimConsole(ctx, nodeID, holder, &u, Time(store.Timestamp(time.Now())))
	switch {
	case q.dialect.ForeignKeyViolation(err):
		return false, store.NotFound("node", nodeID)
	case err != nil:
		return false, q.wrap("claim console", err)
	}
	return n > 0, nil
}

func (q Queries) SaveConsoleLog(ctx context.Context, nodeID, holder, log string, until time.Time) (bool, error) {
	if !store.Storable(nodeID, holder, log) {
		return false, baremetal.FieldErrorf("log", "console log of node %s cannot be stored", nodeID)
	}
	u := Time(store.Timestamp(until))
	n, err := q.w.SaveConsoleLog(ctx, log, &u, Time(store.Timestamp(time.Now())), nodeID, holder)
	if err != nil {
		return false, q.wrap("save console log", err)
	}
	return n > 0, nil
}

func (q Queries) ReleaseConsole(ctx context.Context, nodeID, holder string) error {
	if !store.Storable(nodeID, holder) {
		return nil
	}
	if err := q.w.ReleaseConsole(ctx, nodeID, holder); err != nil {
		return q.wrap("release console", err)
	}
	return nil
}

func (q Queries) GetConsoleLog(ctx context.Context, nodeID string) (*baremetal.ConsoleLog, error) {
	notFound := &baremetal.Error{Code: baremetal.CodeNotFound, Message: fmt.Sprintf("no console log recorded for node %s", nodeID)}
	if !store.Storable(nodeID) {
		return nil, notFound
	}
	r, err := q.r.GetConsole(ctx, nodeID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, q.wrap("get console log", err)
	}
	c := &baremetal.ConsoleLog{NodeID: r.NodeID, Log: r.Log, Holder: r.Holder, UpdatedAt: time.Time(r.UpdatedAt)}
	if r.LeaseUntil != nil {
		t := time.Time(*r.LeaseUntil)
		c.LeaseUntil = &t
	}
	return c, nil
}
