package service

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// NodeSpec is every operator-settable field of a node. In an update an
// empty BMC.Password keeps the stored one (the API never returns it, so a
// client cannot echo it back).
type NodeSpec struct {
	Name          string
	Driver        baremetal.Driver
	BMC           baremetal.BMC
	ResourceClass string
	// Properties are the operator's overrides: each property set (not 0
	// or "") wins over inspection; one left empty shows what inspection
	// found (see baremetal.Node.SetOverrides).
	Properties        baremetal.Properties
	Maintenance       bool
	MaintenanceReason string
	// CleanErase and InspectOnEnroll are the node's own settings, each
	// winning over the controller's (and, for the erase, the resource
	// class's); unset ("" and nil) follows those.
	CleanErase      baremetal.CleanErase
	InspectOnEnroll *bool
	// Traits are the operator's (the derived ones are the controller's);
	// Owner the project whose instances alone are placed on the node.
	Traits []string
	Owner  string
	// Settings are the hardware settings the operator declares (BIOS,
	// Secure Boot); ApplySettings asks for them to be applied now (the
	// request named them), or as soon as the node holds no instance.
	Settings      baremetal.HardwareSettings
	ApplySettings bool
}

// SpecOf returns the settable fields of n (password left empty; of the
// properties, the operator's overrides only).
func SpecOf(n *baremetal.Node) NodeSpec {
	b := n.BMC
	b.Password = ""
	return NodeSpec{Name: n.Name, Driver: n.Driver, BMC: b, ResourceClass: n.ResourceClass,
		Properties: n.OperatorProperties(), Maintenance: n.Maintenance, MaintenanceReason: n.MaintenanceReason,
		CleanErase: n.CleanErase, InspectOnEnroll: n.InspectOnEnroll,
		Traits: baremetal.SortedTraits(n.Traits), Owner: n.Owner,
		Settings: baremetal.HardwareSettings{BIOS: n.Settings.BIOS, SecureBoot: n.Settings.SecureBoot,
			RAID: n.Settings.RAID, Firmware: n.Settings.Firmware}}
}

// nodeKicker is implemented by job runners that can make a node's pending
// BMC work run now (after its credentials changed) instead of waiting out
// its backoff.
type nodeKicker interface {
	KickNodeTx(ctx context.Context, tx store.Tx, nodeID string) error
}

// newJobInserter is implemented by job runners that can enqueue the
// first job of a node created in the same transaction more cheaply
// (jobs.Runner.InsertNewTx).
type newJobInserter interface {
	InsertNewTx(ctx context.Context, tx store.Tx, args river.JobArgs) error
}

// insertNewTx enqueues args, the first job of a node created in tx.
func (s *Service) insertNewTx(ctx context.Context, tx store.Tx, args river.JobArgs) error {
	if r, ok := s.jobs.(newJobInserter); ok {
		return r.InsertNewTx(ctx, tx, args)
	}
	_, err := s.jobs.InsertTx(ctx, tx, args)
	return err
}

// CreateNode enrolls a node: it starts in enroll and a verify job reaches
// its BMC once before it becomes available.
func (s *Service) CreateNode(ctx context.Context, c Caller, spec NodeSpec) (*baremetal.Node, error) {
	return s.CreateNodeOnce(ctx, c, spec, Once{})
}

// CreateNodeOnce is CreateNode made idempotent by o (see Once).
func (s *Service) CreateNodeOnce(ctx context.Context, c Caller, spec NodeSpec, o Once) (*baremetal.Node, error) {
	if err := requireAdmin(c, "enroll nodes"); err != nil {
		return nil, err
	}
	n := &baremetal.Node{
		Name: spec.Name, Driver: spec.Driver, BMC: spec.BMC, ResourceClass: spec.ResourceClass,
		Maintenance: spec.Maintenance, MaintenanceReason: spec.MaintenanceReason,
		CleanErase: spec.CleanErase, InspectOnEnroll: spec.InspectOnEnroll,
		PowerState: baremetal.PowerUnknown, ProvisionState: baremetal.StateEnroll,
		Traits: append([]string{}, spec.Traits...), DerivedTraits: []string{}, Owner: spec.Owner, // Validate sorts them
		// Declared at enroll: applied once the BMC is verified (and the
		// node inspected, when it is), before it is ever scheduled.
		Settings: baremetal.HardwareSettings{BIOS: spec.Settings.BIOS, SecureBoot: spec.Settings.SecureBoot,
			RAID: spec.Settings.RAID, Firmware: spec.Settings.Firmware, Waiting: !spec.Settings.IsZero()},
	}
	n.SetOverrides(spec.Properties)
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if err := s.checkSettings(ctx, n); err != nil {
		return nil, err
	}
	// Outside the transaction: a BMC call never holds the database.
	started := time.Now()
	res, err := s.resolveSystem(ctx, n)
	if err != nil {
		return nil, err
	}
	var members []string
	var verified *jobs.Verified
	if res != nil {
		members = res.Members
		if res.ID != "" {
			n.BMC.SystemID = res.ID // what the BMC serves keys the node
		}
		took := time.Since(started)
		rtt := res.RoundTrip
		if rtt <= 0 {
			rtt = took // the driver does not say: the lookup's time, an upper bound
		}
		if s.verifier != nil && rtt <= s.verifyFast {
			verified = s.verifier.VerifyAtEnroll(ctx, n, res, min(s.resolveWithin-took, verifyAtEnrollWithin))
		}
	}
	// Each attempt of the transaction starts from the node as asked for
	// (the verification changes it in place).
	asked := *n
	asked.Traits, asked.DerivedTraits = slices.Clone(n.Traits), slices.Clone(n.DerivedTraits)
	var replay *baremetal.Node
	err = s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		replay = nil
		*n = asked
		n.Traits, n.DerivedTraits = slices.Clone(asked.Traits), slices.Clone(asked.DerivedTraits)
		if id, err := replayed(ctx, tx, c, "node", o); err != nil || id != "" {
			if err != nil {
				return err
			}
			if replay, err = tx.GetNode(ctx, id); baremetal.IsCode(err, baremetal.CodeNotFound) {
				return goneSince("node", id)
			}
			return err
		}
		// Look before inserting: after a failed statement PostgreSQL
		// aborts the transaction, so the explanation could not be read.
		if err := nameFree(ctx, tx, n.Name, ""); err != nil {
			return err
		}
		if err := machineFree(ctx, tx, n, "", members); err != nil {
			return err
		}
		msg := "node enrolled; verifying its BMC"
		switch {
		case n.Maintenance:
			msg = "node enrolled in maintenance: " + n.MaintenanceReason
		case verified != nil:
			msg = "node enrolled"
		}
		if err := tx.Enroll(ctx, n, c.Actor(), msg); err != nil {
			return err
		}
		if verified != nil {
			// The controller's change, after the operator's enroll, as
			// the verify job would have written it.
			if _, _, err := tx.Apply(ctx, n, ledger.Controller, verified.Apply(ctx)); err != nil {
				return err
			}
		} else if err := s.insertNewTx(ctx, tx, jobs.VerifyArgs{NodeID: n.ID}); err != nil {
			return err
		}
		return remember(ctx, tx, c, "node", o, n.ID)
	})
	if err != nil {
		return nil, err
	}
	if replay != nil {
		s.log.InfoContext(ctx, "node create replayed (same Idempotency-Key and request)", "node_id", replay.ID, "by", c.Actor())
		return replay, nil
	}
	s.log.InfoContext(ctx, "node enrolled", "node_id", n.ID, "name", n.Name, "driver", n.Driver, "by", c.Actor(),
		"state", n.ProvisionState)
	return n, nil
}

// nameFree checks that no node other than self is called name, and
// explains a clash, including a node still being deleted under that name.
func nameFree(ctx context.Context, q store.Queries, name, self string) error {
	old, err := q.GetNode(ctx, name)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if old.ID == self {
		return nil
	}
	if old.ProvisionState == baremetal.StateDeleting {
		return &baremetal.Error{Code: baremetal.CodeConflict, Field: "name",
			Message: fmt.Sprintf("a node named %q is still being deleted (id %s); wait for its retire job to finish or delete it with force=true", name, old.ID)}
	}
	return &baremetal.Error{Code: baremetal.CodeConflict, Field: "name",
		Message: fmt.Sprintf("a node named %q already exists (id %s)", name, old.ID)}
}

// GetNode returns a node by id or name.
func (s *Service) GetNode(ctx context.Context, c Caller, idOrName string) (*baremetal.Node, error) {
	n, err := s.store.GetNode(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	if !c.Admin() && n.Owner != "" && n.Owner != c.Project {
		// Another project's node is not there for a member, unless an
		// admin pinned one of the member's instances to it.
		mine := false
		if n.InstanceID != "" {
			if mine, err = s.ownInstance(ctx, s.store, c, n.InstanceID); err != nil {
				return nil, err
			}
		}
		if !mine {
			return nil, store.NotFound("node", idOrName)
		}
	}
	if err := s.hideOthersInstances(ctx, c, n); err != nil {
		return nil, err
	}
	return n, nil
}

// ListNodes returns a page of nodes.
func (s *Service) ListNodes(ctx context.Context, c Caller, f store.NodeFilter) ([]*baremetal.Node, string, error) {
	if !c.Admin() && !c.Monitor() {
		// Members see the nodes no project owns and their own project's;
		// a monitor sees the whole fleet (its health is what it watches),
		// as a member sees a node and with no instance ids.
		f.VisibleTo = c.Project
	}
	nodes, next, err := s.store.ListNodes(ctx, f)
	if err != nil {
		return nil, "", err
	}
	if err := s.hideOthersInstances(ctx, c, nodes...); err != nil {
		return nil, "", err
	}
	return nodes, next, nil
}

// hideOthersInstances clears, for a member, the instance_id of nodes
// that host another project's instance: members see a node's capacity and
// health, and which instances other projects run is none of theirs.
func (s *Service) hideOthersInstances(ctx context.Context, c Caller, nodes ...*baremetal.Node) error {
	if c.Admin() {
		return nil
	}
	for _, n := range nodes {
		if n.InstanceID == "" {
			continue
		}
		if c.Monitor() { // no instance is a monitor's
			n.InstanceID = ""
			continue
		}
		mine, err := s.ownInstance(ctx, s.store, c, n.InstanceID)
		if err != nil {
			return err
		}
		if !mine {
			n.InstanceID = ""
		}
	}
	return nil
}

// ownInstance reports whether the instance id belongs to c's project (an
// instance deleted meanwhile belongs to nobody).
func (s *Service) ownInstance(ctx context.Context, q store.Queries, c Caller, id string) (bool, error) {
	if c.Admin() {
		return true, nil
	}
	i, err := q.GetInstance(ctx, id)
	switch {
	case baremetal.IsCode(err, baremetal.CodeNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return i.Project == c.Project, nil
}

// ListEvents returns a page of a node's events.
func (s *Service) ListEvents(ctx context.Context, c Caller, idOrName string, p store.Page) ([]*baremetal.Event, string, error) {
	if err := requireAdmin(c, "read node events"); err != nil {
		return nil, "", err
	}
	n, err := s.store.GetNode(ctx, idOrName)
	if err != nil {
		return nil, "", err
	}
	return s.store.ListEvents(ctx, n.ID, p)
}

func preconditionFailed(want, have int64) error {
	return baremetal.Errorf(baremetal.CodePrecondition, "If-Match version %d does not match the current version %d; re-read the resource and retry", want, have)
}

// UpdateNode changes a node. apply turns the current node into the wanted
// spec (the HTTP layer applies a JSON Merge Patch there); it is re-run on
// a fresh read if the controller wrote the node concurrently. ifMatch,
// when non-zero, pins the version the client last saw.
func (s *Service) UpdateNode(ctx context.Context, c Caller, idOrName string, ifMatch int64, apply func(cur *baremetal.Node) (NodeSpec, error)) (*baremetal.Node, error) {
	if err := requireAdmin(c, "change nodes (including maintenance)"); err != nil {
		return nil, err
	}
	var out *baremetal.Node
	err := s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		var bmcChanged, reverify, maintenanceCleared, configure bool
		var oldDriver baremetal.Driver
		var oldAddress string
		n, wrote, err := tx.Mutate(ctx, idOrName, c.Actor(), func(tx store.Tx, n *baremetal.Node, ch *ledger.Change) error {
			cur := *n
			oldDriver, oldAddress = cur.Driver, cur.BMC.Address
			if ifMatch != 0 && cur.Version != ifMatch {
				return preconditionFailed(ifMatch, cur.Version)
			}
			spec, err := apply(&cur)
			if err != nil {
				return err
			}
			if cur.ProvisionState == baremetal.StateDeleting {
				// Only maintenance may change: a retire waits while the
				// node is in maintenance, and clearing it is how the
				// operator lets the retire go on.
				same, was := spec, SpecOf(&cur)
				same.Maintenance, same.MaintenanceReason, same.BMC.Password = was.Maintenance, was.MaintenanceReason, ""
				same.Traits = baremetal.SortedTraits(same.Traits)
				same.ApplySettings = false
				if !reflect.DeepEqual(same, was) { // InspectOnEnroll is a pointer: compare what it points to
					return baremetal.Errorf(baremetal.CodeInvalidState, "node %s is being deleted: only maintenance may still change", cur.Name)
				}
			}
			n.Name, n.Driver, n.ResourceClass = spec.Name, spec.Driver, spec.ResourceClass
			n.CleanErase, n.InspectOnEnroll = spec.CleanErase, spec.InspectOnEnroll
			n.Traits, n.Owner = append([]string{}, spec.Traits...), spec.Owner // Validate sorts them
			n.Settings.BIOS, n.Settings.SecureBoot = spec.Settings.BIOS, spec.Settings.SecureBoot
			n.Settings.RAID, n.Settings.Firmware = spec.Settings.RAID, spec.Settings.Firmware
			// An override the operator no longer sets shows what
			// inspection found at once.
			n.SetOverrides(spec.Properties)
			n.Maintenance, n.MaintenanceReason = spec.Maintenance, spec.MaintenanceReason
			if !n.Maintenance {
				n.MaintenanceReason = "" // clearing maintenance clears its reason
			}
			n.BMC = spec.BMC
			if n.BMC.Password == "" {
				n.BMC.Password = cur.BMC.Password
			}
			if sameBMC(cur.Driver, cur.BMC.Address, n.Driver, n.BMC.Address) && baremetal.SameSystemID(n.BMC.SystemID, cur.BMC.SystemID) {
				// Another spelling of the system the node has (a client
				// sending back what it wrote, where the node holds what
				// the BMC serves) changes nothing.
				n.BMC.SystemID = cur.BMC.SystemID
			}
			if err := n.Validate(); err != nil {
				return err
			}
			if err := s.checkSettings(ctx, n); err != nil {
				return err
			}
			if spec.ApplySettings && !n.Settings.IsZero() &&
				(!reflect.DeepEqual(n.Settings, cur.Settings) || len(n.Settings.Unmet(n.Observed)) > 0) {
				// Applied now when the node is free; when it is busy
				// (an instance, a flow), once it is.
				if n.ProvisionState == baremetal.StateAvailable && n.InstanceID == "" {
					if err := n.StartConfiguring(); err != nil {
						return err
					}
					ch.Reason = "applying hardware settings: " + strings.Join(n.Settings.Unmet(n.Observed), "; ")
					configure = true
				} else {
					n.Settings.Waiting = true
				}
			}
			if ledger.Same(&cur, n) {
				return ledger.ErrSkip
			}
			bmcChanged = cur.Driver != n.Driver || cur.BMC != n.BMC
			maintenanceCleared = cur.Maintenance && !n.Maintenance
			reverify = cur.Driver != n.Driver || cur.BMC.Address != n.BMC.Address || cur.BMC.SystemID != n.BMC.SystemID
			if bmcChanged {
				// New credentials deserve an immediate try, not the rest of
				// the old backoff, and a count of failures of their own:
				// those counted so far were the old settings' (a client
				// waiting for the node to be verified reads the count to
				// tell credentials the BMC keeps refusing). The fault stays
				// until the first success, as always.
				n.NextCheckAt = nil
				n.BMCFailures = 0
			}
			if reverify {
				// New settings, new question: whether this node is another's
				// machine is asked again by the verify.
				n.ClearFault(baremetal.FaultDuplicate)
			}
			if reverify && (n.ProvisionState == baremetal.StateAvailable || n.ProvisionState == baremetal.StateConfiguring) {
				// A configure under way stops (its flow ends with the
				// state): its settings were for the machine the old
				// settings reached; they are applied to this one once it
				// is verified as the node's.
				if n.ProvisionState == baremetal.StateConfiguring {
					n.Settings.Waiting = true
				}
				if err := n.Transition(baremetal.StateEnroll); err != nil {
					return err
				}
				ch.Reason = "BMC changed; re-verifying before scheduling on it again"
			}
			if reverify {
				if err := machineFree(ctx, tx, n, cur.ID, nil); err != nil {
					return err
				}
			}
			if n.Name != cur.Name {
				return nameFree(ctx, tx, n.Name, cur.ID)
			}
			return nil
		})
		out = n
		if errors.Is(err, ledger.ErrSkip) {
			return nil
		}
		if err != nil || !wrote {
			return err
		}
		if configure {
			if _, err := s.jobs.InsertTx(ctx, tx, jobs.ConfigureArgs{NodeID: n.ID}); err != nil {
				return err
			}
		}
		if n.ProvisionState == baremetal.StateEnroll && (reverify || bmcChanged) {
			if _, err := s.jobs.InsertTx(ctx, tx, jobs.VerifyArgs{NodeID: n.ID}); err != nil {
				return err
			}
		}
		if reverify {
			// Moved off its BMC, or to another system of it: a node found
			// to be a second node of its machine there may be the
			// machine's node now.
			if err := s.reverifyOthersOnBMC(ctx, tx, oldDriver, oldAddress, n.ID); err != nil {
				return err
			}
		}
		// Work that waited for maintenance (a retire, a cleanup) goes on
		// now that it is cleared, not at its next snooze.
		if k, ok := s.jobs.(nodeKicker); ok && (bmcChanged || maintenanceCleared) {
			if err := k.KickNodeTx(ctx, tx, n.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteNode retires a node: it goes deleting at once (hidden from
// scheduling) and a retire job powers it off and removes the record. An
// instance on it is deleted first, on the same always-succeeds path. With
// force the record is removed at once without touching the BMC.
// It returns the retire job's id (0 with force) and whether the node is
// in maintenance (its retire then waits for the operator).
func (s *Service) DeleteNode(ctx context.Context, c Caller, idOrName string, ifMatch int64, force bool) (int64, bool, error) {
	return s.deleteNode(ctx, c, idOrName, ifMatch, force, false)
}

// DeleteUnverifiedNode removes the record of a node its controller never
// got into (force=true&unverified_only=true): only while the node is in
// enroll without an instance, checked in the delete's transaction, so a
// node verified meanwhile (its BMC took the corrected credentials) is
// never removed without its retire: that is a 409, and the caller
// deletes it as any other.
func (s *Service) DeleteUnverifiedNode(ctx context.Context, c Caller, idOrName string, ifMatch int64) (int64, bool, error) {
	return s.deleteNode(ctx, c, idOrName, ifMatch, true, true)
}

func (s *Service) deleteNode(ctx context.Context, c Caller, idOrName string, ifMatch int64, force, unverifiedOnly bool) (int64, bool, error) {
	if err := requireAdmin(c, "delete nodes"); err != nil {
		return 0, false, err
	}
	var jobID int64
	var name, id string
	var maintenance bool
	err := s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		n, err := tx.GetNode(ctx, idOrName)
		if err != nil {
			return err
		}
		if ifMatch != 0 && n.Version != ifMatch {
			return preconditionFailed(ifMatch, n.Version)
		}
		if unverifiedOnly && (n.ProvisionState != baremetal.StateEnroll || n.InstanceID != "") {
			return baremetal.Errorf(baremetal.CodeConflict, "node %s is %s now, not an enrolled node its controller never got into: delete it without unverified_only, so that its retire powers it off",
				n.Name, n.ProvisionState)
		}
		name, id = n.Name, n.ID
		if n.InstanceID != "" {
			if inst, err := tx.GetInstance(ctx, n.InstanceID); err == nil {
				if err := tx.DeleteInstance(ctx, inst.ID, inst.Version); err != nil {
					return err
				}
				// Held by the node until its retire removes it (freed
				// below when the record goes now).
				if _, err := tx.ReleaseInstanceAddresses(ctx, inst.ID); err != nil {
					return err
				}
				if err := tx.Note(ctx, n, c.Actor(), &baremetal.Event{Type: "instance_deleted",
					Field: "instance_id", Old: inst.ID, Message: fmt.Sprintf("instance %s deleted with its node", inst.Name)}); err != nil {
					return err
				}
			} else if !baremetal.IsCode(err, baremetal.CodeNotFound) {
				return err
			}
		}
		if force {
			if err := tx.Remove(ctx, n); err != nil {
				return err
			}
			if _, err := tx.FreeNodeAddresses(ctx, n.ID); err != nil {
				return err
			}
			return s.reverifyOthersOnBMC(ctx, tx, n.Driver, n.BMC.Address, n.ID)
		}
		n, _, err = tx.Apply(ctx, n, c.Actor(), func(_ store.Tx, n *baremetal.Node, ch *ledger.Change) error {
			n.InstanceID = ""
			if n.ProvisionState == baremetal.StateDeleting {
				return nil
			}
			ch.Reason = "node deletion requested; retire job queued"
			if n.Maintenance {
				ch.Reason = "node deletion requested; the retire job waits until maintenance is cleared (or delete with force=true)"
			}
			return n.Transition(baremetal.StateDeleting)
		})
		if err != nil {
			return err
		}
		// Queued again on a repeated delete: uniqueness makes it a no-op
		// when the retire is still queued, and re-queues it otherwise.
		jobID, err = s.jobs.InsertTx(ctx, tx, jobs.RetireArgs{NodeID: n.ID})
		maintenance = n.Maintenance
		return err
	})
	if err != nil {
		return 0, false, err
	}
	if force {
		// The node's events go with its record, so the audit trail of a
		// forced delete is the log.
		s.log.WarnContext(ctx, "node force-deleted without touching its BMC", "node_id", id, "name", name, "by", c.Actor())
	} else {
		s.log.InfoContext(ctx, "node deletion queued", "node_id", id, "name", name, "job_id", jobID, "by", c.Actor())
	}
	return jobID, maintenance, nil
}

// PowerNode queues an admin power action.
func (s *Service) PowerNode(ctx context.Context, c Caller, idOrName, target string) (int64, error) {
	if err := requireAdmin(c, "change node power"); err != nil {
		return 0, err
	}
	if !slices.Contains(bmc.PowerActions, bmc.PowerAction(target)) {
		return 0, baremetal.FieldErrorf("target", "target %q must be one of %s", target, strings.Join(api.PowerActions(), ", "))
	}
	var jobID int64
	err := s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		n, err := tx.GetNode(ctx, idOrName)
		if err != nil {
			return err
		}
		if n.ProvisionState == baremetal.StateDeleting {
			return baremetal.Errorf(baremetal.CodeInvalidState, "node %s is being deleted", n.Name)
		}
		if err := tx.Note(ctx, n, c.Actor(), &baremetal.Event{Type: "power_requested",
			Message: "power " + target + " requested"}); err != nil {
			return err
		}
		jobID, err = s.jobs.InsertTx(ctx, tx, jobs.PowerArgs{NodeID: n.ID, Action: target, Actor: string(c.Actor())})
		return err
	})
	return jobID, err
}

// checkSettings refuses hardware settings n's BMC cannot take, as far as
// the controller knows before reaching it: a driver without them (IPMI),
// what the last read found the BMC lacks, and values the BMC's attribute
// registry (read when settings were last applied or read back) refuses.
// The configure flow checks again against what the BMC says then.
func (s *Service) checkSettings(ctx context.Context, n *baremetal.Node) error {
	h := n.Settings
	if h.IsZero() {
		return nil
	}
	lacks := func(field, what string) error {
		return baremetal.FieldErrorf(field, "node %s's BMC (%s) has no %s, so %s cannot be applied; remove it", n.Name, n.Driver, what, field)
	}
	if n.Driver == baremetal.DriverIPMI {
		switch {
		case len(h.BIOS) > 0:
			return lacks("bios_settings", "BIOS settings (IPMI has none; a Redfish BMC's Bios resource does)")
		case h.SecureBoot != nil:
			return lacks("secure_boot", "Secure Boot setting (IPMI has none; a Redfish BMC's SecureBoot resource does)")
		case h.RAID != nil:
			return lacks("raid", "RAID volumes (IPMI has none; a Redfish BMC's Storage resource does)")
		}
		return lacks("firmware", "firmware updates (IPMI has none; a Redfish BMC's UpdateService does)")
	}
	if h.RAID != nil && slices.Contains(n.Observed.Lacks, "RAID") {
		return lacks("raid", "RAID volumes (no Storage resource)")
	}
	if len(h.Firmware) > 0 && slices.Contains(n.Observed.Lacks, "firmware updates") {
		return lacks("firmware", "firmware updates (no UpdateService SimpleUpdate)")
	}
	if len(h.BIOS) > 0 && slices.Contains(n.Observed.Lacks, "BIOS settings") {
		return lacks("bios_settings", "BIOS settings (no Bios resource)")
	}
	if h.SecureBoot != nil && slices.Contains(n.Observed.Lacks, "Secure Boot") {
		return lacks("secure_boot", "Secure Boot setting (no SecureBoot resource)")
	}
	if name := n.Observed.Registry; name != "" && len(h.BIOS) > 0 {
		reg, err := s.store.GetBIOSRegistry(ctx, name)
		if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
			return err
		}
		if reg != nil {
			return h.ValidateAgainst(reg, nil)
		}
	}
	return nil
}
