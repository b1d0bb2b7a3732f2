package sqlstore

import (
	"errors"
	"fmt"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Dialect is what the shared code needs to know about a database's
// errors; the rest of what differs (connections, transactions, locking)
// stays in the dialect's package.
type Dialect interface {
	// Name prefixes the dialect's errors ("sqlite").
	Name() string
	// Unreachable reports whether err says that the database could not
	// be reached or used at all, as opposed to rejecting the statement.
	// The caller's own cancellation or deadline is not an outage.
	Unreachable(err error) bool
	// UniqueViolation returns the unique constraint err violates, by its
	// name below, or "" when err is not a unique violation.
	UniqueViolation(err error) string
	// ForeignKeyViolation reports whether err violates a foreign key: the
	// row's node is gone.
	ForeignKeyViolation(err error) bool
}

// Wrap gives a failed operation its context ("sqlite: get node: ...").
// An error saying the database could not be reached becomes
// store.Unavailable, so that the API answers 503 (retry) instead of 500.
func Wrap(d Dialect, op string, err error) error {
	if d.Unreachable(err) {
		return store.Unavailable(d.Name()+": "+op, err)
	}
	return fmt.Errorf("%s: %s: %w", d.Name(), op, err)
}

// Classify returns err as store.Unavailable when it says the database
// cannot be reached, and unchanged otherwise (store.Store.Classify).
func Classify(d Dialect, op string, err error) error {
	if d.Unreachable(err) {
		return store.Unavailable(d.Name()+": "+op, err)
	}
	return err
}

// TxError classifies the error a transaction's fn returned: the store's
// own queries' errors are classified already, but a River insert on the
// transaction returns the driver's error as is.
func TxError(d Dialect, err error) error {
	var be *baremetal.Error
	if !errors.As(err, &be) && d.Unreachable(err) {
		return store.Unavailable(d.Name()+": transaction", err)
	}
	return err
}

// The unique constraints the queries tell apart, by PostgreSQL's names
// (migrations); SQLite names the columns instead, and its dialect maps
// them to these.
const (
	NodesPkey                 = "nodes_pkey"
	NodesNameKey              = "nodes_name_key"
	NodesBMCKeyKey            = "nodes_bmc_key_key"
	InstancesPkey             = "instances_pkey"
	InstancesProjectNameKey   = "instances_project_name_key"
	TokensPkey                = "tokens_pkey"
	TokensNameKey             = "tokens_name_key"
	TokensHashKey             = "tokens_hash_key"
	AgentSessionsTokenHashKey = "agent_sessions_token_hash_key"
	IdempotencyKeysPkey       = "idempotency_keys_pkey"
	IPPoolsPkey               = "ip_pools_pkey"
	IPPoolsNameKey            = "ip_pools_name_key"
	IPAllocationsAddressKey   = "ip_allocations_pool_id_address_key"
	IPAllocationsOrdKey       = "ip_allocations_pool_id_ord_key"
)
