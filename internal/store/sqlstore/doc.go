// Package sqlstore is store.Queries written once for both SQL dialects.
package sqlstore
