package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// dbtx is what *pgxpool.Pool and pgx.Tx have in common.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// queries implements store.Queries on the pool or on a transaction.
type queries struct {
	db  dbtx
	box *secret.Box
	// out reads outside any transaction (the pool). After a failed
	// statement PostgreSQL refuses every further one in the transaction,
	// so explaining a unique violation needs another connection.
	out dbtx
}

var _ store.Queries = queries{}

// pgx reads timestamptz in the local zone; the store's contract is UTC.
func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

// ts normalizes a time argument so that PostgreSQL stores exactly what
// the SQLite store would (truncated, not rounded, to microseconds).
func ts(t time.Time) time.Time { return store.Timestamp(t) }

func tsPtr(t *time.Time) *time.Time { return store.TimestampPtr(t) }

// uniqueViolation reports whether err violates the named constraint.
func uniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == constraint
}

func foreignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

func newID(id string) string {
	if id != "" {
		return id
	}
	return uuid.NewString()
}

// args collects query arguments and hands out their placeholders.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
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

// bmc_key (store.BMCKeyArg) follows the fields on insert. An update keeps
// a NULL key while the BMC settings stay as they are: a duplicate left by
// an old database (see store.BackfillBMCKeys) must stay writable by the
// power sync; moving it to another endpoint claims that endpoint's key.
var (
	insertNodeSQL = insertSQL("nodes", slices.Concat(nodeFields, []string{"bmc_key"}))
	updateNodeSQL = updateBMCKeySQL(updateSQL("nodes", nodeFields))
)

// updateBMCKeySQL adds the bmc_key assignment to the node update: its one
// new parameter follows updateSQL's (fields, updated_at, id, version).
func updateBMCKeySQL(update string) string {
	ph := func(field string) string { return "$" + strconv.Itoa(slices.Index(nodeFields, field)+1) }
	set := `, bmc_key = CASE WHEN bmc_key IS NULL AND driver = ` + ph("driver") + ` AND bmc_address = ` + ph("bmc_address") +
		` AND bmc_system_id = ` + ph("bmc_system_id") + ` THEN NULL ELSE $` + strconv.Itoa(len(nodeFields)+4) + `::text END WHERE `
	return strings.Replace(update, " WHERE ", set, 1)
}

// insertSQL: $1 id, $2.. fields, then created_at, updated_at; version 1.
func insertSQL(table string, fields []string) string {
	ph := make([]string, 0, len(fields)+3)
	for i := range len(fields) + 3 {
		ph = append(ph, "$"+strconv.Itoa(i+1))
	}
	return `INSERT INTO ` + table + ` (id, ` + strings.Join(fields, ", ") + `, created_at, updated_at, version)
		VALUES (` + strings.Join(ph, ", ") + `, 1)`
}

// updateSQL: $1.. fields, then updated_at, id, version.
func updateSQL(table string, fields []string) string {
	set := make([]string, 0, len(fields)+2)
	for i, f := range fields {
		set = append(set, f+" = $"+strconv.Itoa(i+1))
	}
	n := len(fields)
	set = append(set, "updated_at = $"+strconv.Itoa(n+1), "version = version + 1")
	return `UPDATE ` + table + ` SET ` + strings.Join(set, ", ") +
		` WHERE id = $` + strconv.Itoa(n+2) + ` AND version = $` + strconv.Itoa(n+3)
}

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
		string(n.ProvisionState), string(n.Fault), n.LastError, tsPtr(n.FaultSince), n.BMCFailures,
		tsPtr(n.NextCheckAt), tsPtr(n.LastSeenAt), n.InstanceID, n.Overrides.CPUs, n.Overrides.MemoryMB,
		n.Overrides.LocalGB, n.Overrides.CPUArch, n.Inspected.CPUs, n.Inspected.MemoryMB, n.Inspected.LocalGB,
		n.Inspected.CPUArch, string(n.CleanErase), n.InspectOnEnroll}, nil
}

func (q queries) scanNode(row pgx.Row) (*baremetal.Node, error) {
	var (
		n                                   baremetal.Node
		driver, power, state, fault, sealed string
		faultSince, nextCheck, lastSeen     *time.Time
		inspected                           *time.Time
		created, updated                    time.Time
		cleanErase                          string
	)
	if err := row.Scan(&n.ID, &n.Name, &driver, &n.BMC.Address, &n.BMC.Username, &sealed, &n.BMC.Insecure,
		&n.BMC.SystemID, &n.BMC.CipherSuite, &n.ResourceClass, &n.Properties.CPUs, &n.Properties.MemoryMB,
		&n.Properties.LocalGB, &n.Properties.CPUArch, &n.Maintenance, &n.MaintenanceReason, &power,
		&state, &fault, &n.LastError, &faultSince, &n.BMCFailures, &nextCheck, &lastSeen,
		&n.InstanceID, &n.Overrides.CPUs, &n.Overrides.MemoryMB, &n.Overrides.LocalGB, &n.Overrides.CPUArch,
		&n.Inspected.CPUs, &n.Inspected.MemoryMB, &n.Inspected.LocalGB, &n.Inspected.CPUArch,
		&cleanErase, &n.InspectOnEnroll, &created, &updated, &n.Version, &inspected); err != nil {
		return nil, err
	}
	n.Driver, n.PowerState = baremetal.Driver(driver), baremetal.PowerState(power)
	n.ProvisionState, n.Fault = baremetal.ProvisionState(state), baremetal.Fault(fault)
	n.FaultSince, n.NextCheckAt, n.LastSeenAt = utcPtr(faultSince), utcPtr(nextCheck), utcPtr(lastSeen)
	n.InspectedAt = utcPtr(inspected)
	n.CleanErase = baremetal.CleanErase(cleanErase)
	n.CreatedAt, n.UpdatedAt = utc(created), utc(updated)
	if sealed != "" {
		var err error
		if n.BMC.Password, err = q.box.Open(sealed); err != nil {
			return nil, fmt.Errorf("node %s: bmc password: %w", n.ID, err)
		}
	}
	return &n, nil
}

func normalizeNodeTimes(n *baremetal.Node) {
	n.FaultSince = store.TimestampPtr(n.FaultSince)
	n.NextCheckAt = store.TimestampPtr(n.NextCheckAt)
	n.LastSeenAt = store.TimestampPtr(n.LastSeenAt)
}

// getNodeSQL finds a node by id or name in one round trip; an id match wins
// over a name match.
const getNodeSQL = `SELECT ` + nodeColumns + ` FROM nodes
	WHERE id = $1 OR name = $1 ORDER BY id = $1 DESC LIMIT 1`

func (q queries) GetNode(ctx context.Context, idOrName string) (*baremetal.Node, error) {
	return q.getNode(ctx, getNodeSQL, idOrName)
}

func (q queries) getNode(ctx context.Context, query, idOrName string) (*baremetal.Node, error) {
	if !store.Storable(idOrName) { // PostgreSQL would refuse the query (see store.Storable)
		return nil, store.NotFound("node", idOrName)
	}
	n, err := q.scanNode(q.db.QueryRow(ctx, query, idOrName))
	if errors.Is(err, pgx.ErrNoRows) {
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
	if !store.Storable(string(f.ProvisionState), f.Fault, f.ResourceClass) {
		return nil, "", nil // no node matches
	}
	limit := store.PageLimit(f.Limit)
	var (
		where []string
		a     args
	)
	if after != "" {
		where = append(where, "id > "+a.add(after))
	}
	if f.ProvisionState != "" {
		where = append(where, "provision_state = "+a.add(string(f.ProvisionState)))
	}
	// Asking for deleting nodes by state shows them without the flag.
	if !f.IncludeDeleting && f.ProvisionState != baremetal.StateDeleting {
		where = append(where, "provision_state <> "+a.add(string(baremetal.StateDeleting)))
	}
	if f.Maintenance != nil {
		where = append(where, "maintenance = "+a.add(*f.Maintenance))
	}
	switch f.Fault {
	case "":
	case "any":
		where = append(where, "fault <> ''")
	case "none":
		where = append(where, "fault = ''")
	default:
		where = append(where, "fault = "+a.add(f.Fault))
	}
	if f.ResourceClass != "" {
		where = append(where, "resource_class = "+a.add(f.ResourceClass))
	}
	if f.DueBefore != nil {
		where = append(where, "(next_check_at IS NULL OR next_check_at <= "+a.add(ts(*f.DueBefore))+")")
	}
	query := `SELECT ` + nodeColumns + ` FROM nodes`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	// One extra row tells whether there is a next page.
	query += ` ORDER BY id LIMIT ` + a.add(limit+1)

	rows, err := q.db.Query(ctx, query, a...)
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

func (q queries) GetNodes(ctx context.Context, ids []string) ([]*baremetal.Node, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > store.MaxPageLimit {
		return nil, fmt.Errorf("postgres: get nodes: %d ids, at most %d", len(ids), store.MaxPageLimit)
	}
	rows, err := q.db.Query(ctx, `SELECT `+nodeColumns+` FROM nodes WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: get nodes: %w", err)
	}
	defer rows.Close()
	nodes := make([]*baremetal.Node, 0, len(ids))
	for rows.Next() {
		n, err := q.scanNode(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: get nodes: %w", err)
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: get nodes: %w", err)
	}
	return nodes, nil
}

func (q queries) CountNodes(ctx context.Context) ([]store.NodeCount, error) {
	rows, err := q.db.Query(ctx, `SELECT provision_state, fault, maintenance, count(*) FROM nodes
		GROUP BY provision_state, fault, maintenance`)
	if err != nil {
		return nil, fmt.Errorf("postgres: count nodes: %w", err)
	}
	defer rows.Close()
	var out []store.NodeCount
	for rows.Next() {
		var (
			c            store.NodeCount
			state, fault string
		)
		if err := rows.Scan(&state, &fault, &c.Maintenance, &c.Count); err != nil {
			return nil, fmt.Errorf("postgres: count nodes: %w", err)
		}
		c.ProvisionState, c.Fault = baremetal.ProvisionState(state), baremetal.Fault(fault)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: count nodes: %w", err)
	}
	return out, nil
}

func (q queries) InsertNode(ctx context.Context, n *baremetal.Node) error {
	fields, err := q.nodeArgs(n)
	if err != nil {
		return wrap("insert node", err)
	}
	id, now, key := newID(n.ID), store.Now(), store.BMCKeyArg(n)
	a := append(append([]any{id}, fields...), key, now, now)
	if _, err := q.db.Exec(ctx, insertNodeSQL, a...); err != nil {
		switch {
		case uniqueViolation(err, "nodes_name_key"):
			return store.Duplicate("name", fmt.Sprintf("a node named %q already exists", n.Name), err)
		case uniqueViolation(err, "nodes_pkey"):
			return store.Duplicate("id", fmt.Sprintf("a node with id %q already exists", id), err)
		case uniqueViolation(err, "nodes_bmc_key_key"):
			return q.duplicateBMC(ctx, key, err)
		}
		return wrap("insert node", err)
	}
	n.ID, n.CreatedAt, n.UpdatedAt, n.Version = id, now, now, 1
	normalizeNodeTimes(n)
	return nil
}

func (q queries) UpdateNode(ctx context.Context, n *baremetal.Node) error {
	fields, err := q.nodeArgs(n)
	if err != nil {
		return wrap("update node", err)
	}
	now, key := store.Now(), store.BMCKeyArg(n)
	tag, err := q.db.Exec(ctx, updateNodeSQL, append(fields, now, n.ID, n.Version, key)...)
	if err != nil {
		switch {
		case uniqueViolation(err, "nodes_name_key"):
			return store.Duplicate("name", fmt.Sprintf("a node named %q already exists", n.Name), err)
		case uniqueViolation(err, "nodes_bmc_key_key"):
			return q.duplicateBMC(ctx, key, err)
		}
		return wrap("update node", err)
	}
	if err := q.checkWritten(ctx, tag, "node", "nodes", n.ID, n.Version); err != nil {
		return err
	}
	n.Version++
	n.UpdatedAt = now
	normalizeNodeTimes(n)
	return nil
}

// duplicateBMC explains a bmc_key violation by naming the holder, read on
// q.out: the violation waited for the holder's transaction to commit, so a
// fresh snapshot sees it (unless this very transaction wrote it).
func (q queries) duplicateBMC(ctx context.Context, key any, cause error) error {
	k, _ := key.(string)
	h, err := bmcHolder(ctx, q.out, k)
	if err != nil {
		return fmt.Errorf("postgres: %w (and reading the node holding it: %v)", cause, err)
	}
	return store.DuplicateBMC(h, cause)
}

func bmcHolder(ctx context.Context, db dbtx, key string) (*store.BMCHolder, error) {
	var h store.BMCHolder
	err := db.QueryRow(ctx, `SELECT id, name, bmc_address, bmc_system_id, provision_state FROM nodes WHERE bmc_key = $1`, key).
		Scan(&h.ID, &h.Name, &h.Address, &h.SystemID, &h.State)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &h, nil
}

func (q queries) DeleteNode(ctx context.Context, id string, version int64) error {
	if !store.Storable(id) {
		return store.NotFound("node", id)
	}
	// Events go by ON DELETE CASCADE.
	tag, err := q.db.Exec(ctx, `DELETE FROM nodes WHERE id = $1 AND version = $2`, id, version)
	if err != nil {
		return wrap("delete node", err)
	}
	return q.checkWritten(ctx, tag, "node", "nodes", id, version)
}

// checkWritten turns a version-checked write that touched no row into the
// right error: the row is gone (not found) or has another version
// (conflict). table is a constant, never input.
func (q queries) checkWritten(ctx context.Context, tag pgconn.CommandTag, kind, table, id string, version int64) error {
	return q.checkWrittenBy(ctx, tag, kind, table, "id", id, version)
}

// checkWrittenBy is checkWritten for a table whose key column is column.
func (q queries) checkWrittenBy(ctx context.Context, tag pgconn.CommandTag, kind, table, column, id string, version int64) error {
	if tag.RowsAffected() > 0 {
		return nil
	}
	var stored int64
	err := q.db.QueryRow(ctx, `SELECT version FROM `+table+` WHERE `+column+` = $1`, id).Scan(&stored)
	if errors.Is(err, pgx.ErrNoRows) {
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
		t = store.Now()
	}
	t = store.Timestamp(t)
	// The id always comes from the database: cursors rely on ids growing
	// in insertion order.
	var id int64
	err := q.db.QueryRow(ctx, insertEventSQL, e.NodeID, t, e.Actor, e.Type, e.Field, e.Old, e.New, e.Message).Scan(&id)
	if err != nil {
		return insertEventErr(e, err)
	}
	e.ID, e.Time = id, t
	return nil
}

const insertEventSQL = `INSERT INTO events (node_id, time, actor, type, field, old, new, message)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`

func insertEventErr(e *baremetal.Event, err error) error {
	if foreignKeyViolation(err) {
		return store.NotFound("node", e.NodeID)
	}
	return wrap("insert event", err)
}

// InsertEvents sends the inserts as one batch: one round trip, the
// statements run in order (ids grow in insertion order).
func (q queries) InsertEvents(ctx context.Context, evs []*baremetal.Event) error {
	switch len(evs) {
	case 0:
		return nil
	case 1:
		return q.InsertEvent(ctx, evs[0])
	}
	times := make([]time.Time, len(evs))
	b := &pgx.Batch{}
	for i, e := range evs {
		t := e.Time
		if t.IsZero() {
			t = store.Now()
		}
		times[i] = store.Timestamp(t)
		b.Queue(insertEventSQL, e.NodeID, times[i], e.Actor, e.Type, e.Field, e.Old, e.New, e.Message)
	}
	br := q.db.SendBatch(ctx, b)
	ids := make([]int64, len(evs))
	for i, e := range evs {
		if err := br.QueryRow().Scan(&ids[i]); err != nil {
			_ = br.Close()
			return insertEventErr(e, err)
		}
	}
	if err := br.Close(); err != nil {
		return wrap("insert events", err)
	}
	for i, e := range evs {
		e.ID, e.Time = ids[i], times[i]
	}
	return nil
}

func (q queries) ListEvents(ctx context.Context, nodeID string, p store.Page) ([]*baremetal.Event, string, error) {
	after, err := decodeIntCursor(p.After)
	if err != nil || !store.Storable(nodeID) {
		return nil, "", err
	}
	limit := store.PageLimit(p.Limit)
	rows, err := q.db.Query(ctx, `SELECT id, node_id, time, actor, type, field, old, new, message
		FROM events WHERE node_id = $1 AND id > $2 ORDER BY id LIMIT $3`, nodeID, after, limit+1)
	if err != nil {
		return nil, "", wrap("list events", err)
	}
	defer rows.Close()
	var events []*baremetal.Event
	for rows.Next() {
		var e baremetal.Event
		if err := rows.Scan(&e.ID, &e.NodeID, &e.Time, &e.Actor, &e.Type, &e.Field, &e.Old, &e.New, &e.Message); err != nil {
			return nil, "", wrap("list events", err)
		}
		e.Time = utc(e.Time)
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
	insertInstanceSQL = insertSQL("instances", instanceFields)
	updateInstanceSQL = updateSQL("instances", instanceFields)
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
		i.DeployTimeout.Milliseconds(), tsPtr(i.BootedAt), string(i.DeployMethod), string(root)}, nil
}

func (q queries) scanInstance(row pgx.Row) (*baremetal.Instance, error) {
	var (
		i                baremetal.Instance
		meta             []byte
		state, power     string
		created, updated time.Time
		timeoutMS        int64
		booted           *time.Time
		sealed, root     string
	)
	if err := row.Scan(&i.ID, &i.Name, &i.Project, &i.NodeID, &i.ResourceClass, &i.Image.URL, &i.Image.Checksum,
		&i.UserData, &meta, &state, &power, &i.LastError, &i.ReadyTokenHash, &i.Ready,
		&sealed, &timeoutMS, &booted, &i.DeployMethod, &root, &created, &updated, &i.Version); err != nil {
		return nil, err
	}
	i.DeployTimeout = time.Duration(timeoutMS) * time.Millisecond
	i.BootedAt = utcPtr(booted)
	if sealed != "" {
		var err error
		if i.ReadyToken, err = q.box.Open(sealed); err != nil {
			return nil, fmt.Errorf("instance %s: ready token: %w", i.ID, err)
		}
	}
	if err := json.Unmarshal(meta, &i.Metadata); err != nil {
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
	i.State, i.PowerState = baremetal.InstanceState(state), baremetal.PowerState(power)
	i.CreatedAt, i.UpdatedAt = utc(created), utc(updated)
	return &i, nil
}

func (q queries) GetInstance(ctx context.Context, idOrName string) (*baremetal.Instance, error) {
	if !store.Storable(idOrName) {
		return nil, store.NotFound("instance", idOrName)
	}
	// Names are unique per project only: two rows by name is ambiguous.
	rows, err := q.db.Query(ctx, `SELECT `+instanceColumns+` FROM instances
		WHERE id = $1 OR name = $1 ORDER BY id = $1 DESC, id LIMIT 2`, idOrName)
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
	if err != nil || !store.Storable(f.Project, f.Name, f.NodeID) {
		return nil, "", err
	}
	limit := store.PageLimit(f.Limit)
	var (
		where []string
		a     args
	)
	if after != "" {
		where = append(where, "id > "+a.add(after))
	}
	if f.Project != "" {
		where = append(where, "project = "+a.add(f.Project))
	}
	if f.Name != "" {
		where = append(where, "name = "+a.add(f.Name))
	}
	if f.NodeID != "" {
		where = append(where, "node_id = "+a.add(f.NodeID))
	}
	query := `SELECT ` + instanceColumns + ` FROM instances`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id LIMIT ` + a.add(limit+1)
	rows, err := q.db.Query(ctx, query, a...)
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
	fields, err := q.instanceArgs(i)
	if err != nil {
		return wrap("insert instance", err)
	}
	id, now := newID(i.ID), store.Now()
	a := append(append([]any{id}, fields...), now, now)
	if _, err := q.db.Exec(ctx, insertInstanceSQL, a...); err != nil {
		switch {
		case uniqueViolation(err, "instances_project_name_key"):
			return duplicateInstance(i, err)
		case uniqueViolation(err, "instances_pkey"):
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
	fields, err := q.instanceArgs(i)
	if err != nil {
		return wrap("update instance", err)
	}
	now := store.Now()
	tag, err := q.db.Exec(ctx, updateInstanceSQL, append(fields, now, i.ID, i.Version)...)
	if err != nil {
		if uniqueViolation(err, "instances_project_name_key") {
			return duplicateInstance(i, err)
		}
		return wrap("update instance", err)
	}
	if err := q.checkWritten(ctx, tag, "instance", "instances", i.ID, i.Version); err != nil {
		return err
	}
	i.Version++
	i.UpdatedAt = now
	return nil
}

func (q queries) DeleteInstance(ctx context.Context, id string, version int64) error {
	if !store.Storable(id) {
		return store.NotFound("instance", id)
	}
	tag, err := q.db.Exec(ctx, `DELETE FROM instances WHERE id = $1 AND version = $2`, id, version)
	if err != nil {
		return wrap("delete instance", err)
	}
	return q.checkWritten(ctx, tag, "instance", "instances", id, version)
}

// CountInstances counts a project's instances; "" counts every project's.
func (q queries) CountInstances(ctx context.Context, project string) (int, error) {
	if !store.Storable(project) {
		return 0, nil
	}
	var n int
	err := q.db.QueryRow(ctx, `SELECT count(*) FROM instances WHERE $1::text = '' OR project = $1`, project).Scan(&n)
	if err != nil {
		return 0, wrap("count instances", err)
	}
	return n, nil
}

// ---- tokens ----

const tokenColumns = `id, name, role, project, hash, expires_at, created_at`

func scanToken(row pgx.Row) (*baremetal.Token, error) {
	var (
		t       baremetal.Token
		role    string
		expires *time.Time
		created time.Time
	)
	if err := row.Scan(&t.ID, &t.Name, &role, &t.Project, &t.Hash, &expires, &created); err != nil {
		return nil, err
	}
	t.Role, t.ExpiresAt, t.CreatedAt = baremetal.Role(role), utcPtr(expires), utc(created)
	return &t, nil
}

func (q queries) InsertToken(ctx context.Context, t *baremetal.Token) error {
	id, now := newID(t.ID), store.Now()
	_, err := q.db.Exec(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		id, t.Name, string(t.Role), t.Project, t.Hash, tsPtr(t.ExpiresAt), now)
	if err != nil {
		switch {
		case uniqueViolation(err, "tokens_name_key"):
			return store.Duplicate("name", fmt.Sprintf("a token named %q already exists", t.Name), err)
		case uniqueViolation(err, "tokens_hash_key"):
			// Never echo the hash: it identifies a credential.
			return store.Duplicate("hash", "a token with this secret already exists", err)
		case uniqueViolation(err, "tokens_pkey"):
			return store.Duplicate("id", fmt.Sprintf("a token with id %q already exists", id), err)
		}
		return wrap("insert token", err)
	}
	t.ID, t.CreatedAt, t.ExpiresAt = id, now, store.TimestampPtr(t.ExpiresAt)
	return nil
}

func (q queries) GetTokenByHash(ctx context.Context, hash string) (*baremetal.Token, error) {
	notFound := &baremetal.Error{Code: baremetal.CodeNotFound, Message: "token not found"}
	if !store.Storable(hash) {
		return nil, notFound
	}
	t, err := scanToken(q.db.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, wrap("get token", err)
	}
	return t, nil
}

func (q queries) GetToken(ctx context.Context, id string) (*baremetal.Token, error) {
	if !store.Storable(id) {
		return nil, store.NotFound("token", id)
	}
	t, err := scanToken(q.db.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := q.db.Query(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id > $1 ORDER BY id LIMIT $2`, after, limit+1)
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
	if !store.Storable(id) {
		return store.NotFound("token", id)
	}
	tag, err := q.db.Exec(ctx, `DELETE FROM tokens WHERE id = $1`, id)
	if err != nil {
		return wrap("delete token", err)
	}
	if tag.RowsAffected() == 0 {
		return store.NotFound("token", id)
	}
	return nil
}

func (q queries) CountTokens(ctx context.Context) (int, error) {
	var n int
	if err := q.db.QueryRow(ctx, `SELECT count(*) FROM tokens`).Scan(&n); err != nil {
		return 0, wrap("count tokens", err)
	}
	return n, nil
}

// ---- quotas ----

func (q queries) GetQuota(ctx context.Context, project string) (*baremetal.Quota, error) {
	quota := &baremetal.Quota{Project: project, Instances: -1}
	if !store.Storable(project) {
		return quota, nil // not set
	}
	err := q.db.QueryRow(ctx, `SELECT instances FROM quotas WHERE project = $1`, project).Scan(&quota.Instances)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, wrap("get quota", err)
	}
	return quota, nil
}

func (q queries) SetQuota(ctx context.Context, quota *baremetal.Quota) error {
	_, err := q.db.Exec(ctx, `INSERT INTO quotas (project, instances) VALUES ($1, $2)
		ON CONFLICT (project) DO UPDATE SET instances = excluded.instances`, quota.Project, quota.Instances)
	if err != nil {
		return wrap("set quota", err)
	}
	return nil
}
