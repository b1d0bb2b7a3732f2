package sqlstore

import "github.com/baremetal-tf/terraform-provider-baremetal/internal/secret"

// Dialect is what the shared queries need to know about a database's
// errors; the rest of what differs (connections, transactions, locking)
// stays in the dialect's package.
type Dialect interface {
	// Wrap gives a failed operation its context ("sqlite: get node: ...")
	// and turns an error saying the database could not be reached into
	// store.Unavailable.
	Wrap(op string, err error) error
	// UniqueViolation returns the unique constraint err violates, by its
	// name below, or "" when err is not a unique violation.
	UniqueViolation(err error) string
	// ForeignKeyViolation reports whether err violates a foreign key: the
	// row's node is gone.
	ForeignKeyViolation(err error) bool
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
)

// Binding is a dialect bound once (Bind): its generated code's typed
// calls and its errors.
type Binding[Q Plain] struct {
	dialect Dialect
	typed   typed[Q]
}

// Queries returns the store.Queries of one store or transaction. read
// serves reads; write the writes and the reads that must see them (a
// write's version check); explain the reads that explain a failed write
// (naming the node that holds a BMC endpoint): on PostgreSQL a failed
// statement fails every later one in its transaction, so there it is the
// pool, where on SQLite it is the transaction itself (one connection:
// anything else would wait for it).
func (b *Binding[Q]) Queries(box *secret.Box, read, write, explain Q) Queries[Q] {
	return Queries[Q]{b: b, box: box, r: read, w: write, x: explain}
}
