package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// One machine, one node. A Redfish node is keyed by its system as the BMC
// serves it (its @odata.id), which enroll asks the BMC for when it answers
// within a few seconds: a second node for a machine is then refused at
// once, with a 409 naming the first, however its system_id was spelled.
// A BMC that does not answer in time does not hold the enroll up: the
// node is enrolled on what its settings show, and the verify job asks
// the BMC before the node may do anything (see jobs.verifyWorker).

// ResolveSystemsAtEnroll makes enroll ask a new Redfish node's BMC which
// system it is (bmc.SystemResolver), for at most within; without it
// (tests of the service alone) the verify job alone asks. o is the
// controller's bmc.Drivers, whose errors come redacted.
func (s *Service) ResolveSystemsAtEnroll(o bmc.Opener, within time.Duration) {
	s.bmc, s.resolveWithin = o, within
}

// EnrollVerifier reads a new node's BMC within its enroll request
// (jobs.Runner): what it answered makes the node verified in the
// enroll's own transaction; nil leaves the node to the verify job.
type EnrollVerifier interface {
	VerifyAtEnroll(ctx context.Context, n *baremetal.Node, res *bmc.ResolvedSystem, d time.Duration) *jobs.Verified
}

// VerifyAtEnroll makes an enroll whose BMC named the node's system
// (ResolveSystemsAtEnroll), and whose requests took at most fast lately
// (bmc.ResolvedSystem.RoundTrip, the enroll's login and lookup among
// them), read its power and inventory too, within verifyAtEnrollWithin
// (and what is left of the resolve's bound), and write the node verified
// at once.
//
// A BMC that answers in milliseconds (a fast one on the same LAN) makes
// an enroll CPU-bound: verifying in the request saves the verify job's
// insert, fetch, completion and second write of the node, a third of the
// enroll's CPU, and the client's poll. A slower one would hold the
// request two more round trips, which costs a script enrolling with a
// few clients more than the job does (the verify jobs run --workers at
// once while the script goes on): its nodes keep the job.
func (s *Service) VerifyAtEnroll(v EnrollVerifier, fast time.Duration) {
	s.verifier, s.verifyFast = v, fast
}

// verifyAtEnrollWithin bounds the reads of a verify at enroll; a BMC
// slower than that leaves the node to its job.
const verifyAtEnrollWithin = time.Second

// resolveSystem asks n's BMC which system n is, bounded by
// resolveWithin. It returns what the BMC said, or (with a nil error)
// nothing when the BMC could not be asked or did not answer in time: the
// verify job asks again. An answer that no retry changes (no such
// system, a system_id needed) is an invalid bmc.system_id.
func (s *Service) resolveSystem(ctx context.Context, n *baremetal.Node) (*bmc.ResolvedSystem, error) {
	if s.bmc == nil || n.Driver != baremetal.DriverRedfish {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.resolveWithin)
	defer cancel()
	started := time.Now()
	// Errors come redacted: s.bmc is the controller's bmc.Drivers.
	c, err := s.bmc.Open(ctx, bmc.Endpoint{Driver: string(n.Driver), Address: n.BMC.Address, Username: n.BMC.Username,
		Password: n.BMC.Password, Insecure: n.BMC.Insecure, SystemID: n.BMC.SystemID})
	if err != nil {
		s.log.InfoContext(ctx, "enroll: the BMC's system is left to the verify job", "name", n.Name, "err", err)
		return nil, nil
	}
	r, err := bmc.Capability[bmc.SystemResolver](c)
	if err != nil {
		return nil, nil
	}
	res, err := r.ResolveSystem(ctx)
	switch {
	case err == nil:
		s.log.DebugContext(ctx, "enroll: the BMC named the node's system", "name", n.Name, "system", res.ID, "took", time.Since(started))
		return &res, nil
	case errors.Is(err, bmc.ErrSystemNotFound), errors.Is(err, bmc.ErrSystemIDRequired):
		msg := err.Error()
		if be := (*bmc.Error)(nil); errors.As(err, &be) {
			msg = be.Err.Error() // without "bmc resolve system: bmc_error: "
		}
		return nil, baremetal.FieldErrorf("bmc.system_id", "bmc.system_id: %s", msg)
	default:
		s.log.InfoContext(ctx, "enroll: the BMC did not say which system the node is; the verify job will ask it",
			"name", n.Name, "took", time.Since(started).Round(time.Millisecond), "err", err)
		return nil, nil
	}
}

// machineFree checks that no node but self (its id; "" for a node being
// created) is n's machine, among the nodes on n's BMC (store.SameMachine;
// members are the systems the BMC listed, nil when it was not asked),
// read by their keys where n names its system (store.MachineKeys): an
// enroll on a BMC of many systems reads the few nodes that may be its
// machine, not every node on the BMC. A
// node on the same system, in any spelling, is the conflict the unique
// BMC key would raise; one that is only known to be the same machine
// (one of the two names no system) is a conflict on bmc.system_id.
//
// Two transactions that look at one BMC's nodes at once (two creates of
// one machine, spelled differently, so that the unique BMC key cannot
// tell) are serialized on the BMC's endpoint: on PostgreSQL by a
// transaction-scoped advisory lock; SQLite's transactions hold its one
// write lock from their start.
func machineFree(ctx context.Context, tx store.Tx, n *baremetal.Node, self string, members []string) error {
	if n.Driver != baremetal.DriverRedfish {
		return nil
	}
	ep, err := baremetal.BMCEndpointKey(n.Driver, n.BMC.Address)
	if err != nil {
		return nil // Validate said so already
	}
	if pg, ok := tx.Native().(pgx.Tx); ok {
		if _, err := pg.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "bmc-endpoint:"+ep); err != nil {
			return fmt.Errorf("lock BMC endpoint: %w", err)
		}
	}
	var others []store.BMCHolder
	if keys, ok := store.MachineKeys(n, members); ok {
		others, err = tx.NodesWithBMCKeys(ctx, keys...)
	} else {
		others, err = tx.NodesOnBMC(ctx, ep)
	}
	if err != nil {
		return err
	}
	same := store.SameMachine(n, self, others, members)
	if len(same) == 0 {
		return nil
	}
	h := same[0]
	if baremetal.SameSystemID(h.SystemID, n.BMC.SystemID) {
		return store.DuplicateBMC(&h, nil)
	}
	return store.SameMachineConflict(n, &h)
}

// sameBMC reports whether two drivers and addresses reach one BMC
// (baremetal.BMCEndpointKey): a system id from one means the same on the
// other.
func sameBMC(driverA baremetal.Driver, addressA string, driverB baremetal.Driver, addressB string) bool {
	a, errA := baremetal.BMCEndpointKey(driverA, addressA)
	b, errB := baremetal.BMCEndpointKey(driverB, addressB)
	return errA == nil && errB == nil && a == b
}

// bmcReverifier is implemented by job runners that can wake the verify of
// the nodes left on a BMC (jobs.Runner.ReverifyOthersOnBMCTx).
type bmcReverifier interface {
	ReverifyOthersOnBMCTx(ctx context.Context, tx store.Tx, driver baremetal.Driver, address, except string) error
}

var (
	_ bmcReverifier  = (*jobs.Runner)(nil)
	_ newJobInserter = (*jobs.Runner)(nil)
)

// reverifyOthersOnBMC wakes, in tx, the verify of the nodes on the BMC of
// driver and address but except, which goes or moves away: one found to
// be a second node of except's machine may be the machine's node now.
func (s *Service) reverifyOthersOnBMC(ctx context.Context, tx store.Tx, driver baremetal.Driver, address, except string) error {
	if r, ok := s.jobs.(bmcReverifier); ok {
		return r.ReverifyOthersOnBMCTx(ctx, tx, driver, address, except)
	}
	return nil
}
