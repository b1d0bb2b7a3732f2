package service

import (
	"context"
	"crypto/subtle"
	"fmt"

	"github.com/google/uuid"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// ReadyTokenPrefix starts every instance ready token, so a leaked one is
// recognisable (and never mistaken for an API token: it authenticates one
// call on one instance, nothing else).
const ReadyTokenPrefix = "rdy_"

// newReadyToken returns a fresh ready token.
func newReadyToken() string {
	return ReadyTokenPrefix + NewSecret()[len(TokenPrefix):]
}

var errBadReadyToken = baremetal.Errorf(baremetal.CodeUnauthorized,
	"the bearer token is not this instance's ready token (it is in the instance's config drive)")

// InstanceForConfigDrive returns the instance whose config drive key is
// key. Anything else (unknown id, wrong key, an instance without a ready
// token) is not found: the caller is a BMC fetching a URL, and a wrong URL
// should look like a wrong URL.
func (s *Service) InstanceForConfigDrive(ctx context.Context, id, key string) (*baremetal.Instance, error) {
	notFound := baremetal.Errorf(baremetal.CodeNotFound, "no such config drive")
	if _, err := uuid.Parse(id); err != nil {
		return nil, notFound
	}
	inst, err := s.store.GetInstance(ctx, id)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if inst.ReadyToken == "" || subtle.ConstantTimeCompare([]byte(configdrive.Key(inst.ReadyToken)), []byte(key)) != 1 {
		return nil, notFound
	}
	return inst, nil
}

// InstanceReady records the booted OS's readiness callback, authenticated
// by the instance's ready token. A callback while the deploy waits for it
// makes instance and node active. One that comes before power-on was
// observed is remembered, and the deploy finishes as soon as it sees the
// power on. One that comes after the deadline heals the deploy_timeout
// failure: the OS is up after all. Repeats are accepted and change nothing.
func (s *Service) InstanceReady(ctx context.Context, id, token, from string) error {
	if _, err := uuid.Parse(id); err != nil {
		return errBadReadyToken
	}
	// Check the token on a plain read first: a junk token must not queue
	// for the write lock (on SQLite, the one writer connection).
	pre, err := readyInstance(ctx, s.store, id, token)
	if err != nil {
		return err
	}
	if pre.Ready {
		return nil
	}
	var msg string
	err = s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		msg = ""
		inst, err := readyInstance(ctx, tx, id, token)
		if err != nil {
			return err
		}
		if inst.Ready {
			return nil
		}
		inst.Ready = true
		node, err := tx.GetNode(ctx, inst.NodeID)
		if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
			return err
		}
		now := s.now()
		switch {
		case node == nil || node.InstanceID != inst.ID || inst.BootedAt == nil:
			// Node force-deleted or moved on, or not booted yet: remember
			// only (the deploy finishes when it sees the power on).
		case node.ProvisionState == baremetal.StateDeploying:
			msg = fmt.Sprintf("instance %s reported ready %s after power-on (from %s)", inst.Name, baremetal.HumanDuration(now.Sub(*inst.BootedAt)), from)
		case node.ProvisionState == baremetal.StateDeployFailed && inst.State == baremetal.InstanceError:
			msg = fmt.Sprintf("instance %s reported ready %s after power-on, past its deploy_timeout of %s (from %s); deploy_timeout cleared",
				inst.Name, baremetal.HumanDuration(now.Sub(*inst.BootedAt)), inst.DeployTimeout, from)
		}
		if msg != "" {
			_, _, err := tx.Apply(ctx, node, ledger.Instance(inst.ID), func(_ store.Tx, n *baremetal.Node, ch *ledger.Change) error {
				ch.Reason = msg
				return baremetal.FinishDeploy(n, inst)
			})
			if err != nil {
				return err
			}
		}
		return tx.UpdateInstance(ctx, inst)
	})
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "instance ready callback", "instance_id", id, "from", from, "activated", msg != "")
	return nil
}

// readyInstance reads instance id and checks that token is its ready
// token; any mismatch, including an unknown id, is errBadReadyToken.
func readyInstance(ctx context.Context, q store.Queries, id, token string) (*baremetal.Instance, error) {
	inst, err := q.GetInstance(ctx, id)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil, errBadReadyToken
	}
	if err != nil {
		return nil, err
	}
	if inst.ReadyTokenHash == "" || subtle.ConstantTimeCompare([]byte(HashSecret(token)), []byte(inst.ReadyTokenHash)) != 1 {
		return nil, errBadReadyToken
	}
	return inst, nil
}
