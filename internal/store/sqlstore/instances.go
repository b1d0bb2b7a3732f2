package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// ---- events ----

// EventTime is the time an event is stored with: its own, else now.
func EventTime(e *baremetal.Event) Time {
	t := e.Time
	if t.IsZero() {
		t = store.Now()
	}
	return Time(store.Timestamp(t))
}

func (q Queries) InsertEvent(ctx context.Context, e *baremetal.Event) error {
	if !store.Storable(e.NodeID) {
		return store.NotFound("node", e.NodeID)
	}
	t := EventTime(e)
	id, err := q.w.InsertEvent(ctx, e.NodeID, t, e.Actor, e.Type, e.Field, e.Old, e.New, e.Message)
	if err != nil {
		return q.EventError(e, err)
	}
	e.ID, e.Time = id, time.Time(t)
	return nil
}

// EventError is the error of a failed insert of e.
func (q Queries) EventError(e *baremetal.Event, err error) error {
	if q.dialect.ForeignKeyViolation(err) {
		return store.NotFound("node", e.NodeID)
	}
	return q.wrap("insert event", err)
}

// InsertEvents inserts one event after another; IDs and times are set
// only when all were written.
func (q Queries) InsertEvents(ctx context.Context, evs []*baremetal.Event) error {
	done := make([]baremetal.Event, len(evs))
	for i, e := range evs {
		done[i] = *e
		if err := q.InsertEvent(ctx, &done[i]); err != nil {
			return err
		}
	}
	for i, e := range evs {
		e.ID, e.Time = done[i].ID, done[i].Time
	}
	return nil
}

func (q Queries) ListEvents(ctx context.Context, nodeID string, p store.Page) ([]*baremetal.Event, string, error) {
	after, err := decodeIntCursor(p.After)
	if err != nil || !store.Storable(nodeID) {
		return nil, "", err
	}
	limit := store.PageLimit(p.Limit)
	rs, err := q.r.ListEvents(ctx, nodeID, after, int64(limit)+1)
	if err != nil {
		return nil, "", q.wrap("list events", err)
	}
	var events []*baremetal.Event
	for _, r := range rs {
		events = append(events, &baremetal.Event{ID: r.ID, NodeID: r.NodeID, Time: time.Time(r.Time), Actor: r.Actor,
			Type: r.Type, Field: r.Field, Old: r.Old, New: r.New, Message: r.Message})
	}
	events, next := store.TrimPage(events, limit, func(e *baremetal.Event) string { return strconv.FormatInt(e.ID, 10) })
	return events, next, nil
}

func decodeIntCursor(c string) (int64, error) {
	key, err := store.DecodeCursor(c)
	if err != nil || key == "" {
		return 0, err
	}
	v, err := strconv.ParseInt(key, 10, 64)
	if err != nil || v < 0 {
		return 0, &baremetal.Error{Code: baremetal.CodeInvalid, Field: "cursor", Message: "malformed cursor"}
	}
	return v, nil
}

// ---- instances ----

func (q Queries) instance(r *InstanceRow) (*baremetal.Instance, error) {
	i := &baremetal.Instance{
		ID: r.ID, Name: r.Name, Project: r.Project, NodeID: r.NodeID, ResourceClass: r.ResourceClass,
		Image:    baremetal.Image{URL: r.ImageURL, Checksum: r.ImageChecksum},
		UserData: r.UserData, State: baremetal.InstanceState(r.State), PowerState: baremetal.PowerState(r.PowerState),
		LastError: r.LastError, ReadyTokenHash: r.ReadyTokenHash, Ready: r.Ready,
		DeployTimeout: time.Duration(r.DeployTimeoutMS) * time.Millisecond,
		DeployMethod:  baremetal.DeployMethod(r.DeployMethod),
		BootedAt:      (*time.Time)(r.BootedAt),
		Rebuilds:      int(r.Rebuilds),
		CreatedAt:     time.Time(r.CreatedAt),
		UpdatedAt:     time.Time(r.UpdatedAt),
		Version:       r.Version,
	}
	if r.ReadyTokenSealed != "" {
		var err error
		if i.ReadyToken, err = q.box.Open(r.ReadyTokenSealed); err != nil {
			return nil, fmt.Errorf("instance %s: ready token: %w", i.ID, err)
		}
	}
	// An empty map and no map are the same thing to every caller; nil
	// keeps reads identical whichever was written.
	if err := json.Unmarshal([]byte(r.Metadata), &i.Metadata); err != nil {
		return nil, fmt.Errorf("instance %s: metadata: %w", i.ID, err)
	}
	if len(i.Metadata) == 0 {
		i.Metadata = nil
	}
	if err := json.Unmarshal([]byte(r.RootDevice), &i.RootDevice); err != nil {
		return nil, fmt.Errorf("instance %s: root_device: %w", i.ID, err)
	}
	if len(i.RootDevice) == 0 {
		i.RootDevice = nil
	}
	if r.Network != "" {
		i.Network = new(baremetal.Network)
		if err := json.Unmarshal([]byte(r.Network), i.Network); err != nil {
			return nil, fmt.Errorf("instance %s: network: %w", i.ID, err)
		}
	}
	if r.Addresses != "" {
		if err := json.Unmarshal([]byte(r.Addresses), &i.Addresses); err != nil {
			return nil, fmt.Errorf("instance %s: addresses: %w", i.ID, err)
		}
	}
	if r.Requirements != "" {
		if err := json.Unmarshal([]byte(r.Requirements), &i.Requirements); err != nil {
			return nil, fmt.Errorf("instance %s: requirements: %w", i.ID, err)
		}
	}
	return i, nil
}

// instances returns the instances of a list query's rows (nil for none).
func (q Queries) instances(rs []*InstanceRow) ([]*baremetal.Instance, error) {
	var list []*baremetal.Instance
	for _, r := range rs {
		i, err := q.instance(r)
		if err != nil {
			return nil, err
		}
		list = append(list, i)
	}
	return list, nil
}

// instanceWrite is the parameters of a write of i: its ready token
// sealed, its maps as JSON objects. ID, Now and Version are the caller's.
func (q Queries) instanceWrite(i *baremetal.Instance) (InstanceWrite, error) {
	sealed := ""
	if i.ReadyToken != "" {
		var err error
		if sealed, err = q.box.Seal(i.ReadyToken); err != nil {
			return InstanceWrite{}, err
		}
	}
	meta, err := jsonObject(i.Metadata)
	if err != nil {
		return InstanceWrite{}, err
	}
	root, err := jsonObject(i.RootDevice)
	if err != nil {
		return InstanceWrite{}, err
	}
	network := ""
	if i.Network != nil {
		b, err := json.Marshal(i.Network)
		if err != nil {
			return InstanceWrite{}, err
		}
		network = string(b)
	}
	addresses := ""
	if len(i.Addresses) > 0 {
		b, err := json.Marshal(i.Addresses)
		if err != nil {
			return InstanceWrite{}, err
		}
		addresses = string(b)
	}
	requirements := ""
	if !i.Requirements.IsZero() {
		b, err := json.Marshal(i.Requirements)
		if err != nil {
			return InstanceWrite{}, err
		}
		requirements = string(b)
	}
	return InstanceWrite{
		Name: i.Name, Project: i.Project, NodeID: i.NodeID, ResourceClass: i.ResourceClass,
		ImageURL: i.Image.URL, ImageChecksum: i.Image.Checksum, UserData: i.UserData, Metadata: meta,
		State: string(i.State), PowerState: string(i.PowerState), LastError: i.LastError,
		ReadyTokenHash: i.ReadyTokenHash, Ready: i.Ready, ReadyTokenSealed: sealed,
		DeployTimeoutMS: i.DeployTimeout.Milliseconds(), BootedAt: (*Time)(i.BootedAt),
		DeployMethod: string(i.DeployMethod), RootDevice: root, Rebuilds: int64(i.Rebuilds), Network: network,
		Addresses: addresses, Requirements: requirements,
	}, nil
}

// jsonObject is m as a JSON object, "{}" when empty.
func jsonObject(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

func (q Queries) GetInstance(ctx context.Context, idOrName string) (*baremetal.Instance, error) {
	if !store.Storable(idOrName) {
		return nil, store.NotFound("instance", idOrName)
	}
	rs, err := q.r.GetInstance(ctx, idOrName)
	if err != nil {
		return nil, q.wrap("get instance", err)
	}
	found, err := q.instances(rs)
	if err != nil {
		return nil, q.wrap("get instance", err)
	}
	switch {
	case len(found) == 0:
		return nil, store.NotFound("instance", idOrName)
	case found[0].ID == idOrName || len(found) == 1:
		return found[0], nil
	}
	return nil, &baremetal.Error{Code: baremetal.CodeConflict, Field: "name",
		Message: fmt.Sprintf("several projects have an instance named %q; use its id", idOrName)}
}

func (q Queries) ListInstances(ctx context.Context, f store.InstanceFilter) ([]*baremetal.Instance, string, error) {
	after, err := store.DecodeIDCursor(f.After)
	if err != nil || !store.Storable(f.Project, f.Name, f.NodeID) {
		return nil, "", err
	}
	limit := store.PageLimit(f.Limit)
	pageLimit := int64(limit) + 1
	// Each filter has the statement whose index serves it (see
	// instances.<dialect>.sql).
	var rs []*InstanceRow
	switch {
	case f.Name != "":
		rs, err = q.r.ListInstancesByName(ctx, f.Name, after, f.Project, f.NodeID, pageLimit)
	case f.NodeID != "":
		rs, err = q.r.ListInstancesByNode(ctx, f.NodeID, after, f.Project, pageLimit)
	default:
		rs, err = q.r.ListInstances(ctx, after, f.Project, pageLimit)
	}
	if err != nil {
		return nil, "", q.wrap("list instances", err)
	}
	list, err := q.instances(rs)
	if err != nil {
		return nil, "", q.wrap("list instances", err)
	}
	list, next := store.TrimPage(list, limit, func(x *baremetal.Instance) string { return x.ID })
	return list, next, nil
}

func duplicateInstance(i *baremetal.Instance, err error) error {
	return store.Duplicate("name", fmt.Sprintf("project %q already has an instance named %q", i.Project, i.Name), err)
}

func (q Queries) InsertInstance(ctx context.Context, i *baremetal.Instance) error {
	w, err := q.instanceWrite(i)
	if err != nil {
		return q.wrap("insert instance", err)
	}
	id, now := newID(i.ID), store.Now()
	w.ID, w.Now = id, Time(now)
	if _, err := q.w.InsertInstance(ctx, w); err != nil {
		switch q.unique(err) {
		case InstancesProjectNameKey:
			return duplicateInstance(i, err)
		case InstancesPkey:
			return store.Duplicate("id", fmt.Sprintf("an instance with id %q already exists", id), err)
		}
		return q.wrap("insert instance", err)
	}
	i.ID, i.CreatedAt, i.UpdatedAt, i.Version = id, now, now, 1
	return nil
}

func (q Queries) UpdateInstance(ctx context.Context, i *baremetal.Instance) error {
	w, err := q.instanceWrite(i)
	if err != nil {
		return q.wrap("update instance", err)
	}
	now := store.Now()
	w.ID, w.Now, w.Version = i.ID, Time(now), i.Version
	changed, err := q.w.UpdateInstance(ctx, w)
	if err != nil {
		if q.unique(err) == InstancesProjectNameKey {
			return duplicateInstance(i, err)
		}
		return q.wrap("update instance", err)
	}
	if err := q.checkWritten(ctx, changed, "instance", i.ID, i.Version, Querier.InstanceVersion); err != nil {
		return err
	}
	i.Version++
	i.UpdatedAt = now
	return nil
}

func (q Queries) DeleteInstance(ctx context.Context, id string, version int64) error {
	if !store.Storable(id) {
		return store.NotFound("instance", id)
	}
	changed, err := q.w.DeleteInstance(ctx, id, version)
	if err != nil {
		return q.wrap("delete instance", err)
	}
	return q.checkWritten(ctx, changed, "instance", id, version, Querier.InstanceVersion)
}

// CountInstances counts a project's instances; "" counts every project's.
func (q Queries) CountInstances(ctx context.Context, project string) (int, error) {
	if !store.Storable(project) {
		return 0, nil
	}
	n, err := q.r.CountInstances(ctx, project)
	if err != nil {
		return 0, q.wrap("count instances", err)
	}
	return int(n), nil
}

// ---- quotas ----

func (q Queries) GetQuota(ctx context.Context, project string) (*baremetal.Quota, error) {
	quota := &baremetal.Quota{Project: project, Instances: -1}
	if !store.Storable(project) {
		return quota, nil // not set
	}
	n, err := q.r.GetQuota(ctx, project)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return quota, nil
	case err != nil:
		return nil, q.wrap("get quota", err)
	}
	quota.Instances = int(n)
	return quota, nil
}

func (q Queries) SetQuota(ctx context.Context, quota *baremetal.Quota) error {
	if err := q.w.SetQuota(ctx, quota.Project, int64(quota.Instances)); err != nil {
		return q.wrap("set quota", err)
	}
	return nil
}
