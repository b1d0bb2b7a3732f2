package service

import (
	"context"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Once makes a create idempotent: a client sends an Idempotency-Key with
// it, and a retry of the same request under the same key (its first
// answer was lost: a timeout, a controller restart) gets the object the
// first one created instead of a name conflict. Keys are the token's own
// and honoured for a day. The zero Once is an ordinary create.
type Once struct {
	Key string
	// RequestHash is the hex SHA-256 of the request body: the same key
	// with another request is refused.
	RequestHash string
}

// replayed returns the id of the object kind that the same request made
// under o already ("" for none), or an error when the key was used for
// another request.
func replayed(ctx context.Context, q store.Queries, c Caller, kind string, o Once) (string, error) {
	if o.Key == "" {
		return "", nil
	}
	k, err := q.GetIdempotencyKey(ctx, c.TokenID, o.Key)
	switch {
	case baremetal.IsCode(err, baremetal.CodeNotFound):
		return "", nil
	case err != nil:
		return "", err
	case k.Kind != kind || k.RequestHash != o.RequestHash:
		return "", baremetal.FieldErrorf("Idempotency-Key",
			"Idempotency-Key %q was used for another request (a %s request) in the last 24 hours; a new request needs a new key", o.Key, k.Kind)
	}
	return k.ResourceID, nil
}

// remember records that o created the object id of kind.
func remember(ctx context.Context, tx store.Tx, c Caller, kind string, o Once, id string) error {
	if o.Key == "" {
		return nil
	}
	return tx.PutIdempotencyKey(ctx, &baremetal.IdempotencyKey{TokenID: c.TokenID, Key: o.Key, Kind: kind, RequestHash: o.RequestHash, ResourceID: id})
}

// goneSince explains a replay whose object was deleted meanwhile.
func goneSince(kind, id string) error {
	return baremetal.Errorf(baremetal.CodeConflict, "the %s created under this Idempotency-Key (id %s) was deleted since; a new request needs a new key", kind, id)
}
