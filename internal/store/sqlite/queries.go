package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// dbtx is what *sql.DB and *sql.Tx have in common.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// queries implements store.Queries. r serves reads and w writes: the read
// pool and the writer for the Store, the transaction for both in a Tx (a
// transaction must see its own writes).
type queries struct {
	r, w dbtx
	box  *secret.Box
}

var _ store.Queries = queries{}

// timeLayout is fixed-width so that stored times sort and compare as text.
const timeLayout = "2006-01-02T15:04:05.000000Z"

func nowUTC() time.Time { return store.Now() }

func fmtTime(t time.Time) string { return store.Timestamp(t).Format(timeLayout) }

func fmtTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return fmtTime(*t)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

func parseTimePtr(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// uniqueViolation reports whether err is a UNIQUE or PRIMARY KEY violation
// naming column (as "table.column" in SQLite's message).
func uniqueViolation(err error, column string) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return strings.Contains(se.Error(), column)
	}
	return false
}

func foreignKeyViolation(err error) bool {
	var se *msqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

type scanner interface{ Scan(dest ...any) error }

func newID(id string) string {
	if id != "" {
		return id
	}
	return uuid.NewString()
}

// ---- nodes ----

const nodeColumns = `id, name, driver, bmc_address, bmc_username, bmc_password_sealed, bmc_insecure,
	bmc_system_id, bmc_cipher_suite, resource_class, cpus, memory_mb, local_gb, cpu_arch,
	maintenance, maintenance_reason, power_state, provision_state, fault, last_error, fault_since,
	bmc_failures, next_check_at, last_seen_at, instance_id, cpus_override, memory_mb_override,
	local_gb_override, cpu_arch_override, inspected_cpus, inspected_memory_mb, inspected_local_gb,
	inspected_cpu_arch, clean_erase, inspect_on_enroll, created_at, updated_at, version,
	(SELECT inspected_at FROM node_inventories i WHERE i.node_id = nodes.id)`

// nodeFields are the columns a write sets from the Node, in nodeArgs order.
var nodeFields = []string{"name", "driver", "bmc_address", "bmc_username", "bmc_password_sealed", "bmc_insecure",
	"bmc_system_id", "bmc_cipher_suite", "resource_class", "cpus", "memory_mb", "local_gb", "cpu_arch",
	"maintenance", "maintenance_reason", "power_state", "provision_state", "fault", "last_error", "fault_since",
	"bmc_failures", "next_check_at", "last_seen_at", "instance_id", "cpus_override", "memory_mb_override",
	"local_gb_override", "cpu_arch_override", "inspected_cpus", "inspected_memory_mb", "inspected_local_gb",
	"inspected_cpu_arch", "clean_erase", "inspect_on_enroll"}

// bmc_key (store.BMCKeyArg) follows the fields. An update keeps a NULL key
// while the BMC settings stay as they are: a duplicate left by an old
// database (see store.BackfillBMCKeys) must stay writable by the power
// sync; moving it to another endpoint claims that endpoint's key.
var (
	insertNodeSQL = `INSERT INTO nodes (id, ` + strings.Join(nodeFields, ", ") + `, bmc_key, created_at, updated_at, version)
		VALUES (?` + strings.Repeat(", ?", len(nodeFields)) + `, ?, ?, ?, 1)`
	updateNodeSQL = `UPDATE nodes SET ` + strings.Join(nodeFields, " = ?, ") + ` = ?,
		bmc_key = CASE WHEN bmc_key IS NULL AND driver = ? AND bmc_address = ? AND bmc_system_id = ? THEN NULL ELSE ? END,
		updated_at = ?, version = version + 1
		WHERE id = ? AND version = ?`
)

func (q queries) nodeArgs(n *baremetal.Node) ([]any, error) {
	sealed := ""
	if n.BMC.Password != "" {
		var err error
		if sealed, err = q.box.Seal(n.BMC.Password); err != nil {
			return nil, err
		}
	}
	return []any{n.Name, string(n.Driver), n.BMC.Address, n.BMC.Username, sealed, n.BMC.Insecure,
		n.BMC.SystemID, n.BMC.CipherSuite, n.ResourceClass, n.Properties.CPUs, n.Properties.MemoryMB,
		n.Properties.LocalGB, n.Properties.CPUArch, n.Maintenance, n.MaintenanceReason, string(n.PowerState),
		string(n.ProvisionState), string(n.Fault), n.LastError, fmtTimePtr(n.FaultSince), n.BMCFailures,
		fmtTimePtr(n.NextCheckAt), fmtTimePtr(n.LastSeenAt), n.InstanceID, n.Overrides.CPUs, n.Overrides.MemoryMB,
		n.Overrides.LocalGB, n.Overrides.CPUArch, n.Inspected.CPUs, n.Inspected.MemoryMB, n.Inspected.LocalGB,
		n.Inspected.CPUArch, string(n.CleanErase), n.InspectOnEnroll}, nil
}

func (q queries) scanNode(sc scanner) (*baremetal.Node, error) {
	var (
		n                             baremetal.Node
		sealed, created, updated      string
		faultSince, nextCheck, lastSe sql.NullString
		inspected                     sql.NullString
		cleanErase                    string
	)
	if err := sc.Scan(&n.ID, &n.Name, &n.Driver, &n.BMC.Address, &n.BMC.Username, &sealed, &n.BMC.Insecure,
		&n.BMC.SystemID, &n.BMC.CipherSuite, &n.ResourceClass, &n.Properties.CPUs, &n.Properties.MemoryMB,
		&n.Properties.LocalGB, &n.Properties.CPUArch, &n.Maintenance, &n.MaintenanceReason, &n.PowerState,
		&n.ProvisionState, &n.Fault, &n.LastError, &faultSince, &n.BMCFailures, &nextCheck, &lastSe,
		&n.InstanceID, &n.Overrides.CPUs, &n.Overrides.MemoryMB, &n.Overrides.LocalGB, &n.Overrides.CPUArch,
		&n.Inspected.CPUs, &n.Inspected.MemoryMB, &n.Inspected.LocalGB, &n.Inspected.CPUArch,
		&cleanErase, &n.InspectOnEnroll, &created, &updated, &n.Version, &inspected); err != nil {
		return nil, err
	}
	n.CleanErase = baremetal.CleanErase(cleanErase)
	var err error
	if sealed != "" {
		if n.BMC.Password, err = q.box.Open(sealed); err != nil {
			return nil, fmt.Errorf("node %s: bmc password: %w", n.ID, err)
		}
	}
	if n.FaultSince, err = parseTimePtr(faultSince); err != nil {
		return nil, err
	}
	if n.NextCheckAt, err = parseTimePtr(nextCheck); err != nil {
		return nil, err
	}
	if n.LastSeenAt, err = parseTimePtr(lastSe); err != nil {
		return nil, err
	}
	if n.InspectedAt, err = parseTimePtr(inspected); err != nil {
		return nil, err
	}
	if n.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if n.UpdatedAt, err = parseTime(updated); err != nil {
		return nil, err
	}
	return &n, nil
}

// normalizeNodeTimes makes n's optional times what a read would return.
func normalizeNodeTimes(n *baremetal.Node) {
	n.FaultSince = store.TimestampPtr(n.FaultSince)
	n.NextCheckAt = store.TimestampPtr(n.NextCheckAt)
	n.LastSeenAt = store.TimestampPtr(n.LastSeenAt)
}

func (q queries) GetNode(ctx context.Context, idOrName string) (*baremetal.Node, error) {
	// One round trip for both lookups; an id match wins over a name match.
	row := q.r.QueryRowContext(ctx, `SELECT `+nodeColumns+` FROM nodes
		WHERE id = ?1 OR name = ?1 ORDER BY id = ?1 DESC LIMIT 1`, idOrName)
	n, err := q.scanNode(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.NotFound("node", idOrName)
	}
	if err != nil {
		return nil, wrap("get node", err)
	}
	return n, nil
}

func (q queries) ListNodes(ctx context.Context, f store.NodeFilter) ([]*baremetal.Node, string, error) {
	after, err := store.DecodeIDCursor(f.After)
	if err != nil {
		return nil, "", err
	}
	limit := store.PageLimit(f.Limit)
	var (
		where []string
		args  []any
	)
	if after != "" {
		where, args = append(where, "id > ?"), append(args, after)
	}
	if f.ProvisionState != "" {
		where, args = append(where, "provision_state = ?"), append(args, string(f.ProvisionState))
	}
	// Asking for deleting nodes by state shows them without the flag.
	if !f.IncludeDeleting && f.ProvisionState != baremetal.StateDeleting {
		where, args = append(where, "provision_state <> ?"), append(args, string(baremetal.StateDeleting))
	}
	if f.Maintenance != nil {
		where, args = append(where, "maintenance = ?"), append(args, *f.Maintenance)
	}
	switch f.Fault {
	case "":
	case "any":
		where = append(where, "fault <> ''")
	case "none":
		where = append(where, "fault = ''")
	default:
		where, args = append(where, "fault = ?"), append(args, f.Fault)
	}
	if f.ResourceClass != "" {
		where, args = append(where, "resource_class = ?"), append(args, f.ResourceClass)
	}
	if f.DueBefore != nil {
		where, args = append(where, "(next_check_at IS NULL OR next_check_at <= ?)"), append(args, fmtTime(*f.DueBefore))
	}
	query := `SELECT ` + nodeColumns + ` FROM nodes`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	// One extra row tells whether there is a next page.
	query += ` ORDER BY id LIMIT ?`
	args = append(args, limit+1)

	rows, err := q.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, "", wrap("list nodes", err)
	}
	defer rows.Close()
	nodes := make([]*baremetal.Node, 0, min(limit, 128))
	for rows.Next() {
		n, err := q.scanNode(rows)
		if err != nil {
			return nil, "", wrap("list nodes", err)
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrap("list nodes", err)
	}
	nodes, next := store.TrimPage(nodes, limit, func(n *baremetal.Node) string { return n.ID })
	return nodes, next, nil
}

// GetNodes passes the ids as one JSON array, so the statement text is the
// same whatever their number (one cached statement, no variable limit).
func (q queries) GetNodes(ctx context.Context, ids []string) ([]*baremetal.Node, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > store.MaxPageLimit {
		return nil, fmt.Errorf("sqlite: get nodes: %d ids, at most %d", len(ids), store.MaxPageLimit)
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("sqlite: get nodes: %w", err)
	}
	rows, err := q.r.QueryContext(ctx, `SELECT `+nodeColumns+` FROM nodes
		WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, string(list))
	if err != nil {
		return nil, fmt.Errorf("sqlite: get nodes: %w", err)
	}
	defer rows.Close()
	nodes := make([]*baremetal.Node, 0, len(ids))
	for rows.Next() {
		n, err := q.scanNode(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: get nodes: %w", err)
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: get nodes: %w", err)
	}
	return nodes, nil
}

func (q queries) CountNodes(ctx context.Context) ([]store.NodeCount, error) {
	rows, err := q.r.QueryContext(ctx, `SELECT provision_state, fault, maintenance, count(*) FROM nodes
		GROUP BY provision_state, fault, maintenance`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count nodes: %w", err)
	}
	defer rows.Close()
	var out []store.NodeCount
	for rows.Next() {
		var c store.NodeCount
		if err := rows.Scan(&c.ProvisionState, &c.Fault, &c.Maintenance, &c.Count); err != nil {
			return nil, fmt.Errorf("sqlite: count nodes: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: count nodes: %w", err)
	}
	return out, nil
}

func (q queries) InsertNode(ctx context.Context, n *baremetal.Node) error {
	args, err := q.nodeArgs(n)
	if err != nil {
		return wrap("insert node", err)
	}
	id, now, key := newID(n.ID), nowUTC(), store.BMCKeyArg(n)
	args = append([]any{id}, args...)
	args = append(args, key, fmtTime(now), fmtTime(now))
	if _, err := q.w.ExecContext(ctx, insertNodeSQL, args...); err != nil {
		switch {
		case uniqueViolation(err, "nodes.name"):
			return store.Duplicate("name", fmt.Sprintf("a node named %q already exists", n.Name), err)
		case uniqueViolation(err, "nodes.id"):
			return store.Duplicate("id", fmt.Sprintf("a node with id %q already exists", id), err)
		case uniqueViolation(err, "nodes.bmc_key"):
			return q.duplicateBMC(ctx, key, err)
		}
		return wrap("insert node", err)
	}
	n.ID, n.CreatedAt, n.UpdatedAt, n.Version = id, now, now, 1
	normalizeNodeTimes(n)
	return nil
}

func (q queries) UpdateNode(ctx context.Context, n *baremetal.Node) error {
	args, err := q.nodeArgs(n)
	if err != nil {
		return wrap("update node", err)
	}
	now, key := nowUTC(), store.BMCKeyArg(n)
	args = append(args, string(n.Driver), n.BMC.Address, n.BMC.SystemID, key, fmtTime(now), n.ID, n.Version)
	res, err := q.w.ExecContext(ctx, updateNodeSQL, args...)
	if err != nil {
		switch {
		case uniqueViolation(err, "nodes.name"):
			return store.Duplicate("name", fmt.Sprintf("a node named %q already exists", n.Name), err)
		case uniqueViolation(err, "nodes.bmc_key"):
			return q.duplicateBMC(ctx, key, err)
		}
		return wrap("update node", err)
	}
	if err := q.checkWritten(ctx, res, "node", "nodes", n.ID, n.Version); err != nil {
		return err
	}
	n.Version++
	n.UpdatedAt = now
	normalizeNodeTimes(n)
	return nil
}

// duplicateBMC explains a bmc_key violation by naming the holder. SQLite
// fails only the statement, so the transaction (if any) can still read it.
func (q queries) duplicateBMC(ctx context.Context, key any, cause error) error {
	k, _ := key.(string)
	h, err := q.bmcHolder(ctx, k)
	if err != nil {
		return fmt.Errorf("sqlite: %w (and reading the node holding it: %v)", cause, err)
	}
	return store.DuplicateBMC(h, cause)
}

func (q queries) bmcHolder(ctx context.Context, key string) (*store.BMCHolder, error) {
	var h store.BMCHolder
	err := q.w.QueryRowContext(ctx, `SELECT id, name, bmc_address, bmc_system_id, provision_state FROM nodes WHERE bmc_key = ?`, key).
		Scan(&h.ID, &h.Name, &h.Address, &h.SystemID, &h.State)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &h, nil
}

func (q queries) DeleteNode(ctx context.Context, id string, version int64) error {
	// Events go by ON DELETE CASCADE.
	res, err := q.w.ExecContext(ctx, `DELETE FROM nodes WHERE id = ? AND version = ?`, id, version)
	if err != nil {
		return wrap("delete node", err)
	}
	return q.checkWritten(ctx, res, "node", "nodes", id, version)
}

// checkWritten turns a version-checked write that touched no row into the
// right error: the row is gone (not found) or has another version
// (conflict). table is a constant, never input.
func (q queries) checkWritten(ctx context.Context, res sql.Result, kind, table, id string, version int64) error {
	return q.checkWrittenBy(ctx, res, kind, table, "id", id, version)
}

// checkWrittenBy is checkWritten for a table whose key column is column.
func (q queries) checkWrittenBy(ctx context.Context, res sql.Result, kind, table, column, id string, version int64) error {
	n, err := res.RowsAffected()
	if err != nil {
		return wrap("write "+kind, err)
	}
	if n > 0 {
		return nil
	}
	var stored int64
	err = q.w.QueryRowContext(ctx, `SELECT version FROM `+table+` WHERE `+column+` = ?`, id).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return store.NotFound(kind, id)
	}
	if err != nil {
		return wrap("write "+kind, err)
	}
	return store.StaleVersion(kind, version, stored)
}

// ---- events ----

func (q queries) InsertEvent(ctx context.Context, e *baremetal.Event) error {
	t := e.Time
	if t.IsZero() {
		t = nowUTC()
	}
	t = store.Timestamp(t)
	// The id always comes from the database: cursors rely on ids growing
	// in insertion order.
	res, err := q.w.ExecContext(ctx, `INSERT INTO events (node_id, time, actor, type, field, old, new, message)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, e.NodeID, fmtTime(t), e.Actor, e.Type, e.Field, e.Old, e.New, e.Message)
	if err != nil {
		if foreignKeyViolation(err) {
			return store.NotFound("node", e.NodeID)
		}
		return wrap("insert event", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return wrap("insert event", err)
	}
	e.ID, e.Time = id, t
	return nil
}

// InsertEvents inserts one event after another: in-process SQLite has no
// round trips to save.
func (q queries) InsertEvents(ctx context.Context, evs []*baremetal.Event) error {
	ids := make([]int64, len(evs))
	times := make([]time.Time, len(evs))
	for i, e := range evs {
		c := *e
		if err := q.InsertEvent(ctx, &c); err != nil {
			return err
		}
		ids[i], times[i] = c.ID, c.Time
	}
	for i, e := range evs {
		e.ID, e.Time = ids[i], times[i]
	}
	return nil
}

func (q queries) ListEvents(ctx context.Context, nodeID string, p store.Page) ([]*baremetal.Event, string, error) {
	after, err := decodeIntCursor(p.After)
	if err != nil {
		return nil, "", err
	}
	limit := store.PageLimit(p.Limit)
	rows, err := q.r.QueryContext(ctx, `SELECT id, node_id, time, actor, type, field, old, new, message
		FROM events WHERE node_id = ? AND id > ? ORDER BY id LIMIT ?`, nodeID, after, limit+1)
	if err != nil {
		return nil, "", wrap("list events", err)
	}
	defer rows.Close()
	var events []*baremetal.Event
	for rows.Next() {
		var (
			e  baremetal.Event
			ts string
		)
		if err := rows.Scan(&e.ID, &e.NodeID, &ts, &e.Actor, &e.Type, &e.Field, &e.Old, &e.New, &e.Message); err != nil {
			return nil, "", wrap("list events", err)
		}
		if e.Time, err = parseTime(ts); err != nil {
			return nil, "", wrap("list events", err)
		}
		events = append(events, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrap("list events", err)
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

const instanceColumns = `id, name, project, node_id, resource_class, image_url, image_checksum, user_data,
	metadata, state, power_state, last_error, ready_token_hash, ready, ready_token_sealed, deploy_timeout_ms,
	booted_at, deploy_method, root_device, created_at, updated_at, version`

var instanceFields = []string{"name", "project", "node_id", "resource_class", "image_url", "image_checksum",
	"user_data", "metadata", "state", "power_state", "last_error", "ready_token_hash", "ready", "ready_token_sealed",
	"deploy_timeout_ms", "booted_at", "deploy_method", "root_device"}

var (
	insertInstanceSQL = `INSERT INTO instances (id, ` + strings.Join(instanceFields, ", ") + `, created_at, updated_at, version)
		VALUES (?` + strings.Repeat(", ?", len(instanceFields)) + `, ?, ?, 1)`
	updateInstanceSQL = `UPDATE instances SET ` + strings.Join(instanceFields, " = ?, ") + ` = ?, updated_at = ?, version = version + 1
		WHERE id = ? AND version = ?`
)

func (q queries) instanceArgs(i *baremetal.Instance) ([]any, error) {
	sealed := ""
	if i.ReadyToken != "" {
		var err error
		if sealed, err = q.box.Seal(i.ReadyToken); err != nil {
			return nil, err
		}
	}
	meta := []byte("{}")
	if len(i.Metadata) > 0 {
		var err error
		if meta, err = json.Marshal(i.Metadata); err != nil {
			return nil, err
		}
	}
	root := []byte("{}")
	if len(i.RootDevice) > 0 {
		var err error
		if root, err = json.Marshal(i.RootDevice); err != nil {
			return nil, err
		}
	}
	return []any{i.Name, i.Project, i.NodeID, i.ResourceClass, i.Image.URL, i.Image.Checksum, i.UserData,
		string(meta), string(i.State), string(i.PowerState), i.LastError, i.ReadyTokenHash, i.Ready, sealed,
		i.DeployTimeout.Milliseconds(), fmtTimePtr(i.BootedAt), string(i.DeployMethod), string(root)}, nil
}

func (q queries) scanInstance(sc scanner) (*baremetal.Instance, error) {
	var (
		i                      baremetal.Instance
		meta, created, updated string
		timeoutMS              int64
		booted                 sql.NullString
		sealed, root           string
	)
	if err := sc.Scan(&i.ID, &i.Name, &i.Project, &i.NodeID, &i.ResourceClass, &i.Image.URL, &i.Image.Checksum,
		&i.UserData, &meta, &i.State, &i.PowerState, &i.LastError, &i.ReadyTokenHash, &i.Ready,
		&sealed, &timeoutMS, &booted, &i.DeployMethod, &root, &created, &updated, &i.Version); err != nil {
		return nil, err
	}
	i.DeployTimeout = time.Duration(timeoutMS) * time.Millisecond
	var err error
	if sealed != "" {
		if i.ReadyToken, err = q.box.Open(sealed); err != nil {
			return nil, fmt.Errorf("instance %s: ready token: %w", i.ID, err)
		}
	}
	if i.BootedAt, err = parseTimePtr(booted); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(meta), &i.Metadata); err != nil {
		return nil, fmt.Errorf("instance %s: metadata: %w", i.ID, err)
	}
	// An empty map and no map are the same thing to every caller; nil
	// keeps reads identical whichever was written.
	if len(i.Metadata) == 0 {
		i.Metadata = nil
	}
	if err := json.Unmarshal([]byte(root), &i.RootDevice); err != nil {
		return nil, fmt.Errorf("instance %s: root_device: %w", i.ID, err)
	}
	if len(i.RootDevice) == 0 {
		i.RootDevice = nil
	}
	if i.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if i.UpdatedAt, err = parseTime(updated); err != nil {
		return nil, err
	}
	return &i, nil
}

func (q queries) GetInstance(ctx context.Context, idOrName string) (*baremetal.Instance, error) {
	// Names are unique per project only: two rows by name is ambiguous.
	rows, err := q.r.QueryContext(ctx, `SELECT `+instanceColumns+` FROM instances
		WHERE id = ?1 OR name = ?1 ORDER BY id = ?1 DESC, id LIMIT 2`, idOrName)
	if err != nil {
		return nil, wrap("get instance", err)
	}
	defer rows.Close()
	var found []*baremetal.Instance
	for rows.Next() {
		i, err := q.scanInstance(rows)
		if err != nil {
			return nil, wrap("get instance", err)
		}
		found = append(found, i)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("get instance", err)
	}
	return pickInstance(found, idOrName)
}

func pickInstance(found []*baremetal.Instance, idOrName string) (*baremetal.Instance, error) {
	switch {
	case len(found) == 0:
		return nil, store.NotFound("instance", idOrName)
	case found[0].ID == idOrName || len(found) == 1:
		return found[0], nil
	}
	return nil, &baremetal.Error{Code: baremetal.CodeConflict, Field: "name",
		Message: fmt.Sprintf("several projects have an instance named %q; use its id", idOrName)}
}

func (q queries) ListInstances(ctx context.Context, f store.InstanceFilter) ([]*baremetal.Instance, string, error) {
	after, err := store.DecodeIDCursor(f.After)
	if err != nil {
		return nil, "", err
	}
	limit := store.PageLimit(f.Limit)
	var (
		where []string
		args  []any
	)
	if after != "" {
		where, args = append(where, "id > ?"), append(args, after)
	}
	if f.Project != "" {
		where, args = append(where, "project = ?"), append(args, f.Project)
	}
	if f.Name != "" {
		where, args = append(where, "name = ?"), append(args, f.Name)
	}
	if f.NodeID != "" {
		where, args = append(where, "node_id = ?"), append(args, f.NodeID)
	}
	query := `SELECT ` + instanceColumns + ` FROM instances`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id LIMIT ?`
	args = append(args, limit+1)
	rows, err := q.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, "", wrap("list instances", err)
	}
	defer rows.Close()
	var list []*baremetal.Instance
	for rows.Next() {
		i, err := q.scanInstance(rows)
		if err != nil {
			return nil, "", wrap("list instances", err)
		}
		list = append(list, i)
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrap("list instances", err)
	}
	list, next := store.TrimPage(list, limit, func(x *baremetal.Instance) string { return x.ID })
	return list, next, nil
}

func (q queries) InsertInstance(ctx context.Context, i *baremetal.Instance) error {
	args, err := q.instanceArgs(i)
	if err != nil {
		return wrap("insert instance", err)
	}
	id, now := newID(i.ID), nowUTC()
	args = append([]any{id}, args...)
	args = append(args, fmtTime(now), fmtTime(now))
	if _, err := q.w.ExecContext(ctx, insertInstanceSQL, args...); err != nil {
		switch {
		case uniqueViolation(err, "instances.name"):
			return duplicateInstance(i, err)
		case uniqueViolation(err, "instances.id"):
			return store.Duplicate("id", fmt.Sprintf("an instance with id %q already exists", id), err)
		}
		return wrap("insert instance", err)
	}
	i.ID, i.CreatedAt, i.UpdatedAt, i.Version = id, now, now, 1
	return nil
}

func duplicateInstance(i *baremetal.Instance, err error) error {
	return store.Duplicate("name", fmt.Sprintf("project %q already has an instance named %q", i.Project, i.Name), err)
}

func (q queries) UpdateInstance(ctx context.Context, i *baremetal.Instance) error {
	args, err := q.instanceArgs(i)
	if err != nil {
		return wrap("update instance", err)
	}
	now := nowUTC()
	args = append(args, fmtTime(now), i.ID, i.Version)
	res, err := q.w.ExecContext(ctx, updateInstanceSQL, args...)
	if err != nil {
		if uniqueViolation(err, "instances.name") {
			return duplicateInstance(i, err)
		}
		return wrap("update instance", err)
	}
	if err := q.checkWritten(ctx, res, "instance", "instances", i.ID, i.Version); err != nil {
		return err
	}
	i.Version++
	i.UpdatedAt = now
	return nil
}

func (q queries) DeleteInstance(ctx context.Context, id string, version int64) error {
	res, err := q.w.ExecContext(ctx, `DELETE FROM instances WHERE id = ? AND version = ?`, id, version)
	if err != nil {
		return wrap("delete instance", err)
	}
	return q.checkWritten(ctx, res, "instance", "instances", id, version)
}

// CountInstances counts a project's instances; "" counts every project's.
func (q queries) CountInstances(ctx context.Context, project string) (int, error) {
	var n int
	err := q.r.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE ?1 = '' OR project = ?1`, project).Scan(&n)
	if err != nil {
		return 0, wrap("count instances", err)
	}
	return n, nil
}

// ---- tokens ----

const tokenColumns = `id, name, role, project, hash, expires_at, created_at`

func scanToken(sc scanner) (*baremetal.Token, error) {
	var (
		t       baremetal.Token
		expires sql.NullString
		created string
	)
	if err := sc.Scan(&t.ID, &t.Name, &t.Role, &t.Project, &t.Hash, &expires, &created); err != nil {
		return nil, err
	}
	var err error
	if t.ExpiresAt, err = parseTimePtr(expires); err != nil {
		return nil, err
	}
	if t.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	return &t, nil
}

func (q queries) InsertToken(ctx context.Context, t *baremetal.Token) error {
	id, now := newID(t.ID), nowUTC()
	_, err := q.w.ExecContext(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		id, t.Name, string(t.Role), t.Project, t.Hash, fmtTimePtr(t.ExpiresAt), fmtTime(now))
	if err != nil {
		switch {
		case uniqueViolation(err, "tokens.name"):
			return store.Duplicate("name", fmt.Sprintf("a token named %q already exists", t.Name), err)
		case uniqueViolation(err, "tokens.hash"):
			// Never echo the hash: it identifies a credential.
			return store.Duplicate("hash", "a token with this secret already exists", err)
		case uniqueViolation(err, "tokens.id"):
			return store.Duplicate("id", fmt.Sprintf("a token with id %q already exists", id), err)
		}
		return wrap("insert token", err)
	}
	t.ID, t.CreatedAt, t.ExpiresAt = id, now, store.TimestampPtr(t.ExpiresAt)
	return nil
}

func (q queries) GetTokenByHash(ctx context.Context, hash string) (*baremetal.Token, error) {
	t, err := scanToken(q.r.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &baremetal.Error{Code: baremetal.CodeNotFound, Message: "token not found"}
	}
	if err != nil {
		return nil, wrap("get token", err)
	}
	return t, nil
}

func (q queries) GetToken(ctx context.Context, id string) (*baremetal.Token, error) {
	t, err := scanToken(q.r.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.NotFound("token", id)
	}
	if err != nil {
		return nil, wrap("get token", err)
	}
	return t, nil
}

func (q queries) ListTokens(ctx context.Context, p store.Page) ([]*baremetal.Token, string, error) {
	after, err := store.DecodeIDCursor(p.After)
	if err != nil {
		return nil, "", err
	}
	limit := store.PageLimit(p.Limit)
	rows, err := q.r.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id > ? ORDER BY id LIMIT ?`, after, limit+1)
	if err != nil {
		return nil, "", wrap("list tokens", err)
	}
	defer rows.Close()
	var list []*baremetal.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, "", wrap("list tokens", err)
		}
		list = append(list, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrap("list tokens", err)
	}
	list, next := store.TrimPage(list, limit, func(x *baremetal.Token) string { return x.ID })
	return list, next, nil
}

func (q queries) DeleteToken(ctx context.Context, id string) error {
	res, err := q.w.ExecContext(ctx, `DELETE FROM tokens WHERE id = ?`, id)
	if err != nil {
		return wrap("delete token", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap("delete token", err)
	}
	if n == 0 {
		return store.NotFound("token", id)
	}
	return nil
}

func (q queries) CountTokens(ctx context.Context) (int, error) {
	var n int
	if err := q.r.QueryRowContext(ctx, `SELECT count(*) FROM tokens`).Scan(&n); err != nil {
		return 0, wrap("count tokens", err)
	}
	return n, nil
}

// ---- quotas ----

func (q queries) GetQuota(ctx context.Context, project string) (*baremetal.Quota, error) {
	quota := &baremetal.Quota{Project: project, Instances: -1}
	err := q.r.QueryRowContext(ctx, `SELECT instances FROM quotas WHERE project = ?`, project).Scan(&quota.Instances)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, wrap("get quota", err)
	}
	return quota, nil
}

func (q queries) SetQuota(ctx context.Context, quota *baremetal.Quota) error {
	_, err := q.w.ExecContext(ctx, `INSERT INTO quotas (project, instances) VALUES (?, ?)
		ON CONFLICT (project) DO UPDATE SET instances = excluded.instances`, quota.Project, quota.Instances)
	if err != nil {
		return wrap("set quota", err)
	}
	return nil
}
