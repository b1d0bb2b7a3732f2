// Package sqlstore is store.Queries written once for both SQL dialects.
//
// A query that both databases run as written is written once, in
// internal/store/queries/<table>.sql; one whose SQL differs is written per
// dialect, in internal/store/<dialect>/queries/<table>.<dialect>.sql. sqlc
// generates each dialect's Go from both directories (internal/dbsqlc; see
// internal/store/sqlc.yaml).
// The two generated packages are made to agree: the same query names,
// parameters in the same order, rows with the same fields of the same
// types (Time for every timestamp). Bind checks that at compile time, by
// converting each generated row to the shared row of its shape
// (generated.go), and Queries does the rest once: rows to domain objects
// and back, sealing secrets, pages and cursors, version checks, the
// errors callers see.
//
// What differs between the databases stays in the dialect's package:
// connections and pools, transactions (SQLite's single writer and group
// commit; PostgreSQL's InTx), locking (PostgreSQL's GetNodeForUpdate,
// through GetNodeWith), batching (PostgreSQL's InsertEvents) and what its
// errors mean (Dialect).
package sqlstore
