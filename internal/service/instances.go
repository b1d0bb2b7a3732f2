package service

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// visible hides other projects' instances from members as not found (not
// forbidden), so a member cannot probe for other projects' names.
func visible(c Caller, i *baremetal.Instance) error {
	if c.Admin() || i.Project == c.Project {
		return nil
	}
	return baremetal.Errorf(baremetal.CodeNotFound, "instance not found")
}

// findInstance resolves an id, or a name within the caller's project
// (names are unique per project; a member must not learn, even from an
// ambiguity error, that another project uses a name). Admins look names
// up across projects and get a conflict when several projects share one.
func findInstance(ctx context.Context, q store.Queries, c Caller, idOrName string) (*baremetal.Instance, error) {
	if c.Admin() {
		return q.GetInstance(ctx, idOrName)
	}
	if _, err := uuid.Parse(idOrName); err == nil {
		i, err := q.GetInstance(ctx, idOrName)
		if err != nil {
			return nil, err
		}
		if err := visible(c, i); err != nil {
			return nil, err
		}
		return i, nil
	}
	found, _, err := q.ListInstances(ctx, store.InstanceFilter{Page: store.Page{Limit: 1}, Project: c.Project, Name: idOrName})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, baremetal.Errorf(baremetal.CodeNotFound, "instance %q not found in project %q", idOrName, c.Project)
	}
	return found[0], nil
}

// GetInstance returns an instance by id or name.
func (s *Service) GetInstance(ctx context.Context, c Caller, idOrName string) (*baremetal.Instance, error) {
	i, err := findInstance(ctx, s.store, c, idOrName)
	if err != nil {
		return nil, err
	}
	return memberView(c, i), nil
}

// memberView is the instance as c may see it. A member's last_error says
// what went wrong with the node's BMC, not the BMC's address, URLs and
// socket errors: those are infrastructure detail for admins, who find
// them in the node's last_error and events (which members do not see
// either). Errors about the member's own input are kept whole.
func memberView(c Caller, i *baremetal.Instance) *baremetal.Instance {
	if c.Admin() || i.LastError == "" {
		return i
	}
	v := *i
	v.LastError = bmc.Summary(i.LastError)
	return &v
}

// ListInstances lists the caller's project's instances (all for admins,
// optionally filtered by project).
func (s *Service) ListInstances(ctx context.Context, c Caller, f store.InstanceFilter) ([]*baremetal.Instance, string, error) {
	if !c.Admin() {
		if f.Project != "" && f.Project != c.Project {
			return nil, "", forbidden("a member may only list its own project's instances")
		}
		f.Project = c.Project
	}
	insts, next, err := s.store.ListInstances(ctx, f)
	if err != nil {
		return nil, "", err
	}
	for k, i := range insts {
		insts[k] = memberView(c, i)
	}
	return insts, next, nil
}

// CreateInstance places an instance on a schedulable node (the pinned one,
// or one of its resource class) and queues its deploy. Two concurrent
// creates never get the same node: a node of the class is claimed with
// its row locked (store.Tx.ClaimNode), so a concurrent create takes
// another one, and the node write is version-checked, so one that took
// the pinned node meanwhile makes the loser look again.
func (s *Service) CreateInstance(ctx context.Context, c Caller, in baremetal.Instance) (*baremetal.Instance, error) {
	return s.CreateInstanceOnce(ctx, c, in, Once{})
}

// CreateInstanceOnce is CreateInstance made idempotent by o (see Once).
func (s *Service) CreateInstanceOnce(ctx context.Context, c Caller, in baremetal.Instance, o Once) (*baremetal.Instance, error) {
	if c.Admin() {
		if in.Project == "" {
			return nil, baremetal.FieldErrorf("project", "project is required when an admin creates an instance")
		}
	} else {
		if in.Project != "" && in.Project != c.Project {
			return nil, forbidden("a member may only create instances in its own project %q", c.Project)
		}
		in.Project = c.Project
	}
	if in.DeployMethod == "" {
		in.DeployMethod = baremetal.DeployLive
		if s.agent {
			in.DeployMethod = baremetal.DeployImage
		}
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.DeployMethod == baremetal.DeployImage && !s.agent {
		return nil, baremetal.FieldErrorf("deploy_method",
			"deploy_method image writes the image with the deploy agent, and this controller serves no agent image: start it with --agent-kernel, or use deploy_method live for an ISO")
	}
	inst := in
	inst.State = baremetal.InstanceDeploying
	inst.Ready, inst.BootedAt = false, nil
	// Every instance gets a ready token; it reaches the booted OS in the
	// config drive (when one is attached) and is never shown by the API.
	inst.ReadyToken = newReadyToken()
	inst.ReadyTokenHash = HashSecret(inst.ReadyToken)
	var replay *baremetal.Instance
	asked := inst
	err := s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		// A retried transaction places the instance as asked again: the
		// node it lost the race for is not its pinned node.
		replay, inst = nil, asked
		if id, err := replayed(ctx, tx, c, "instance", o); err != nil || id != "" {
			if err != nil {
				return err
			}
			if replay, err = tx.GetInstance(ctx, id); baremetal.IsCode(err, baremetal.CodeNotFound) {
				return goneSince("instance", id)
			}
			return err
		}
		if err := s.checkQuota(ctx, tx, inst.Project); err != nil {
			return err
		}
		node, err := s.pickNode(ctx, tx, c, &inst)
		if err != nil {
			return err
		}
		if err := checkNetwork(ctx, tx, node, &inst); err != nil {
			return err
		}
		// The id now: the pools' allocations name it.
		inst.ID = uuid.NewString()
		if err := assignAddresses(ctx, tx, &inst, node.ID, nil, tx.FreeInstanceAddress); err != nil {
			return err
		}
		if inst.ResourceClass == "" {
			inst.ResourceClass = node.ResourceClass
		}
		inst.NodeID = node.ID
		if err := tx.InsertInstance(ctx, &inst); err != nil {
			if baremetal.IsCode(err, baremetal.CodeConflict) {
				return &baremetal.Error{Code: baremetal.CodeConflict, Field: "name", Err: err,
					Message: fmt.Sprintf("an instance named %q already exists in project %q", inst.Name, inst.Project)}
			}
			return err
		}
		// Applied to the node as picked: a concurrent create that took it
		// meanwhile makes the write a version conflict, and we pick again.
		_, _, err = tx.Apply(ctx, node, c.Actor(), func(_ store.Tx, n *baremetal.Node, ch *ledger.Change) error {
			n.InstanceID = inst.ID
			ch.Reason = fmt.Sprintf("allocated to instance %s (project %s); deploying %s", inst.Name, inst.Project, baremetal.RedactURL(inst.Image.URL))
			return n.Transition(baremetal.StateDeploying)
		})
		if err != nil {
			return err
		}
		if _, err = s.jobs.InsertTx(ctx, tx, jobs.DeployArgs{NodeID: node.ID, InstanceID: inst.ID}); err != nil {
			return err
		}
		return remember(ctx, tx, c, "instance", o, inst.ID)
	})
	if err != nil {
		return nil, err
	}
	if replay != nil {
		s.log.InfoContext(ctx, "instance create replayed (same Idempotency-Key and request)", "instance_id", replay.ID, "by", c.Actor())
		return memberView(c, replay), nil
	}
	s.log.InfoContext(ctx, "instance created", "instance_id", inst.ID, "name", inst.Name, "project", inst.Project, "node_id", inst.NodeID, "by", c.Actor())
	return &inst, nil
}

func (s *Service) checkQuota(ctx context.Context, tx store.Tx, project string) error {
	q, err := tx.GetQuota(ctx, project)
	if err != nil {
		return err
	}
	if q.Instances < 0 {
		return nil
	}
	// Rewriting the quota row locks it until commit on PostgreSQL, so two
	// concurrent creates in one project count one after the other instead
	// of both seeing room for one more (SQLite has one writer anyway).
	if err := tx.SetQuota(ctx, q); err != nil {
		return err
	}
	used, err := tx.CountInstances(ctx, project)
	if err != nil {
		return err
	}
	if used >= q.Instances {
		return baremetal.Errorf(baremetal.CodeQuotaExceeded, "project %q has %d of %d instances allowed by its quota; delete one or ask an admin to raise the quota", project, used, q.Instances)
	}
	return nil
}

// pickNode returns the node the instance goes on, or an error that says
// why none can take it.
func (s *Service) pickNode(ctx context.Context, tx store.Tx, c Caller, inst *baremetal.Instance) (*baremetal.Node, error) {
	if inst.NodeID != "" {
		n, err := tx.GetNode(ctx, inst.NodeID)
		if err == nil && !c.Admin() && n.Owner != "" && n.Owner != c.Project {
			// Members do not see nodes another project owns.
			err = store.NotFound("node", inst.NodeID)
		}
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return nil, baremetal.FieldErrorf("node_id", "node %q does not exist", inst.NodeID)
		}
		if err != nil {
			return nil, err
		}
		// An admin may pin a node another project owns: owners steer
		// placement, they do not fence off an admin.
		pinned := baremetal.Placement{Requirements: inst.Requirements, Project: n.Owner}
		if unmet := pinned.Unmet(n); len(unmet) > 0 {
			var capa baremetal.Capacity
			capa.CountPlacement(n, pinned, inst)
			why := make([]string, len(unmet))
			for i, u := range unmet {
				why[i] = pinnedPhrase(u, n)
			}
			return nil, &baremetal.Error{Code: baremetal.CodeNoCapacity, Field: "node_id", Capacity: &capa,
				Message: fmt.Sprintf("node %s does not meet the instance's requirements: %s", n.Name, strings.Join(why, ", "))}
		}
		if !n.Schedulable() {
			// Another project's instance is not named to a member.
			hosted := "already hosts an instance"
			if n.InstanceID != "" {
				mine, err := s.ownInstance(ctx, tx, c, n.InstanceID)
				if err != nil {
					return nil, err
				}
				if mine {
					hosted = "already hosts instance " + n.InstanceID
				}
			}
			var capa baremetal.Capacity
			capa.Count(n, inst)
			return nil, &baremetal.Error{Code: baremetal.CodeNoCapacity, Field: "node_id", Capacity: &capa,
				Message: fmt.Sprintf("node %s cannot take an instance: %s", n.Name, unschedulableReason(n, hosted))}
		}
		if !n.CanCarryConfigDrive(inst) {
			hint := "pin a redfish node"
			if s.agent {
				hint = "use deploy_method image (the deploy agent writes the config drive to disk), or pin a redfish node"
			}
			return nil, baremetal.FieldErrorf("node_id", "node %s is managed over %s, which has no virtual media for the config drive that %s needs with deploy_method live; %s",
				n.Name, n.Driver, configDriveReason(inst), hint)
		}
		return n, nil
	}
	claim := store.NodeClaim{Placement: placementOf(inst)}
	if inst.NeedsMediaDrive() {
		claim.Driver = baremetal.DriverRedfish // CanCarryConfigDrive
	}
	n, err := tx.ClaimNode(ctx, claim)
	if baremetal.IsCode(err, baremetal.CodeNotFound) {
		return nil, s.noCapacity(ctx, tx, inst)
	}
	return n, err
}

func configDriveReason(inst *baremetal.Instance) string {
	switch {
	case inst.UserData != "":
		return "its user_data"
	case inst.HasNetwork():
		return "its network"
	}
	return "its deploy_timeout (the readiness callback)"
}

// unschedulableReason says why n takes no instance; hosted says that it
// hosts one (in words fit for the caller).
func unschedulableReason(n *baremetal.Node, hosted string) string {
	var why []string
	if n.Maintenance {
		why = append(why, "in maintenance ("+n.MaintenanceReason+")")
	}
	if n.Fault != baremetal.FaultNone {
		why = append(why, "faulted ("+string(n.Fault)+")")
	}
	if n.InstanceID != "" {
		why = append(why, hosted)
	}
	if n.ProvisionState != baremetal.StateAvailable {
		why = append(why, "provision state is "+string(n.ProvisionState))
	}
	return strings.Join(why, ", ")
}

// SortedUnmet orders unmet requirements as they are told: the one most
// nodes fail first, then by requirement and value.
func SortedUnmet(us []baremetal.UnmetCount) []baremetal.UnmetCount {
	out := slices.Clone(us)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Nodes != out[j].Nodes {
			return out[i].Nodes > out[j].Nodes
		}
		return out[i].Kind+"\x00"+out[i].Value < out[j].Kind+"\x00"+out[j].Value
	})
	return out
}

// placementOf is what inst asks of its node.
func placementOf(inst *baremetal.Instance) baremetal.Placement {
	return baremetal.Placement{ResourceClass: inst.ResourceClass, Requirements: inst.Requirements, Project: inst.Project}
}

// pinnedPhrase says what a pinned node lacks of one requirement, with the
// node's own value: "lacks trait CUSTOM_GPU_A100", "has 65536 MB memory,
// not 262144".
func pinnedPhrase(u baremetal.Unmet, n *baremetal.Node) string {
	known := func(v int, unit string) string {
		if v == 0 {
			return "unknown " + unit + " (not inspected)"
		}
		return fmt.Sprintf("%d %s", v, unit)
	}
	switch u.Kind {
	case baremetal.UnmetRequiredTrait:
		return "lacks trait " + u.Value
	case baremetal.UnmetForbiddenTrait:
		return "has forbidden trait " + u.Value
	case baremetal.UnmetCPUs:
		return fmt.Sprintf("has %s, not %s", known(n.Properties.CPUs, "CPUs"), u.Value)
	case baremetal.UnmetMemoryMB:
		return fmt.Sprintf("has %s, not %s", known(n.Properties.MemoryMB, "MB memory"), u.Value)
	case baremetal.UnmetDiskGB:
		return fmt.Sprintf("has %s, not %s", known(n.Properties.LocalGB, "GB disk"), u.Value)
	case baremetal.UnmetCPUArch:
		arch := n.Properties.CPUArch
		if arch == "" {
			arch = "unknown (not inspected)"
		}
		return fmt.Sprintf("is %s, not %s", arch, u.Value)
	}
	return u.Phrase(1)
}

// noCapacity says why no node can take inst: per requirement, how many
// nodes fail it, and why each node that fits is not schedulable, e.g.
// `no node of class "gpu" fits: 31 lack trait CUSTOM_GPU_A100, 2 are
// owned by another project; of the 3 that fit, 2 in maintenance, 1
// cleaning`, in words and in numbers (baremetal.Capacity) for clients
// that decide whether to wait.
func (s *Service) noCapacity(ctx context.Context, tx store.Tx, inst *baremetal.Instance) error {
	capa, msg, err := survey(ctx, tx, placementOf(inst), inst)
	if err != nil {
		return err
	}
	return &baremetal.Error{Code: baremetal.CodeNoCapacity, Field: "resource_class", Capacity: &capa, Message: msg}
}

// survey counts the nodes of p's resource class (every node when it has
// none) for an instance like inst, a page at a time (never every node in
// memory at once), and says in words why none can take it.
func survey(ctx context.Context, q store.Queries, p baremetal.Placement, inst *baremetal.Instance) (baremetal.Capacity, string, error) {
	counts := map[string]int{}
	var capa baremetal.Capacity
	f := store.NodeFilter{Page: store.Page{Limit: store.MaxPageLimit}, ResourceClass: p.ResourceClass, IncludeDeleting: true}
	for {
		nodes, next, err := q.ListNodes(ctx, f)
		if err != nil {
			return capa, "", err
		}
		for _, n := range nodes {
			unmet, unfit := capa.CountPlacement(n, p, inst)
			if len(unmet) > 0 {
				continue
			}
			switch unfit {
			case "":
			case baremetal.UnfitMaintenance:
				counts["in maintenance"]++
			case baremetal.UnfitFault:
				counts["faulted ("+string(n.Fault)+")"]++
			case baremetal.UnfitDriver:
				counts[fmt.Sprintf("available but %s (no virtual media for the config drive %s needs with deploy_method live)", n.Driver, configDriveReason(inst))]++
			default:
				counts[string(n.ProvisionState)]++
			}
		}
		if next == "" {
			break
		}
		f.After = next
	}
	of := "no node"
	if p.ResourceClass != "" {
		of = fmt.Sprintf("no node of class %q", p.ResourceClass)
	}
	if capa.Nodes == 0 {
		if p.ResourceClass == "" {
			return capa, "no node is enrolled", nil
		}
		return capa, of + " is available: no node has that resource class", nil
	}
	parts := make([]string, 0, len(counts))
	for k, v := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Slice(parts, func(i, j int) bool { return strings.SplitN(parts[i], " ", 2)[1] < strings.SplitN(parts[j], " ", 2)[1] })
	if capa.Unsuited == 0 {
		if len(parts) == 0 {
			return capa, fmt.Sprintf("%d nodes can take the instance", capa.Available), nil
		}
		return capa, of + " is available: " + strings.Join(parts, ", "), nil
	}
	unmet := SortedUnmet(capa.Unmet)
	why := make([]string, len(unmet))
	for i, u := range unmet {
		why[i] = fmt.Sprintf("%d %s", u.Nodes, u.Phrase(u.Nodes))
	}
	msg := fmt.Sprintf("%s fits the instance's requirements: of %d nodes, %s", of, capa.Nodes, strings.Join(why, ", "))
	fit := capa.Nodes - capa.Unsuited
	switch {
	case fit == 0:
	case capa.Available > 0:
		msg = fmt.Sprintf("%d of %d nodes fit the instance's requirements and %d can take it now; the others: %s", fit, capa.Nodes, capa.Available, strings.Join(why, ", "))
	default:
		msg += fmt.Sprintf("; the %d that fit cannot take it now: %s", fit, strings.Join(parts, ", "))
	}
	return capa, msg, nil
}

// UpdateInstance changes an instance's desired power state or metadata. A
// power change queues a power job on its node.
func (s *Service) UpdateInstance(ctx context.Context, c Caller, idOrName string, ifMatch int64, power *string, metadata *map[string]string) (*baremetal.Instance, error) {
	var out *baremetal.Instance
	err := s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		inst, err := findInstance(ctx, tx, c, idOrName)
		if err != nil {
			return err
		}
		if ifMatch != 0 && inst.Version != ifMatch {
			return preconditionFailed(ifMatch, inst.Version)
		}
		next := *inst
		if power != nil {
			next.PowerState = baremetal.PowerState(*power)
		}
		if metadata != nil {
			next.Metadata = *metadata
		}
		if err := next.ValidateMutable(); err != nil {
			return err
		}
		if err := tx.UpdateInstance(ctx, &next); err != nil {
			return err
		}
		if power != nil && next.PowerState != "" && next.State != baremetal.InstanceDeploying {
			node, err := tx.GetNode(ctx, next.NodeID)
			if err != nil {
				return err
			}
			// A node released by a deploy that failed on the image is
			// no longer this instance's to power.
			if node.InstanceID == next.ID && (node.PowerState != next.PowerState || inst.PowerState != next.PowerState) {
				if err := tx.Note(ctx, node, c.Actor(), &baremetal.Event{Type: "power_requested",
					Message: fmt.Sprintf("instance %s wants power %s", next.Name, next.PowerState)}); err != nil {
					return err
				}
				if _, err := s.jobs.InsertTx(ctx, tx, jobs.PowerArgs{NodeID: node.ID, Action: string(next.PowerState), Actor: string(c.Actor())}); err != nil {
					return err
				}
			}
		}
		out = memberView(c, &next)
		return nil
	})
	return out, err
}

// DeleteInstance removes an instance at once and queues its node's
// cleanup; it succeeds whatever the BMC is doing. It returns the cleanup
// job's id.
func (s *Service) DeleteInstance(ctx context.Context, c Caller, idOrName string, ifMatch int64) (int64, error) {
	var jobID int64
	var inst *baremetal.Instance
	err := ledger.Retry(ctx, func() error {
		// Read before the transaction: on SQLite the read pool serves it
		// while another request holds the single writer, which then only
		// does the writes. The delete below is version-checked, so an
		// instance changed in between is a conflict and the loop reads
		// again (an If-Match on the old version then fails as it should).
		var err error
		inst, err = findInstance(ctx, s.store, c, idOrName)
		if err != nil {
			return err
		}
		if ifMatch != 0 && inst.Version != ifMatch {
			return preconditionFailed(ifMatch, inst.Version)
		}
		return s.ledger.Once(ctx, func(tx *ledger.Tx) error {
			if err := tx.DeleteInstance(ctx, inst.ID, inst.Version); err != nil {
				return err
			}
			// Locked: a concurrent node write (the power sync records every
			// hung BMC's failures) would otherwise make the write below a
			// version conflict, retried after a sleep.
			node, err := tx.GetNodeForUpdate(ctx, inst.NodeID)
			if baremetal.IsCode(err, baremetal.CodeNotFound) {
				// Node force-deleted: nothing to clean, nothing runs
				// the instance's OS any more.
				return assignAddresses(ctx, tx, &baremetal.Instance{ID: inst.ID}, "", poolAddresses(inst.Addresses), tx.FreeInstanceAddress)
			}
			if err != nil {
				return err
			}
			if node.InstanceID != inst.ID && inst.State == baremetal.InstanceError {
				// The node was released when the deploy failed on the
				// instance's image, and cleaned (or is being cleaned) on
				// its own; it may host another instance by now. The
				// instance's addresses were never booted: free.
				return assignAddresses(ctx, tx, &baremetal.Instance{ID: inst.ID}, "", poolAddresses(inst.Addresses), tx.FreeInstanceAddress)
			}
			// The node keeps the addresses until its cleanup (or retire)
			// is done: it may run the deleted instance's OS till then.
			if _, err := tx.ReleaseInstanceAddresses(ctx, inst.ID); err != nil {
				return err
			}
			cleanup := node.ProvisionState != baremetal.StateDeleting
			_, _, err = tx.Apply(ctx, node, c.Actor(), func(_ store.Tx, n *baremetal.Node, ch *ledger.Change) error {
				if n.InstanceID == inst.ID {
					n.InstanceID = ""
				}
				if !cleanup {
					// The retire job powers the node off; no cleanup needed.
					ch.Events = append(ch.Events, &baremetal.Event{Type: "instance_deleted", Field: "instance_id", Old: inst.ID,
						Message: fmt.Sprintf("instance %s deleted; node is being retired", inst.Name)})
					return nil
				}
				msg := fmt.Sprintf("instance %s (project %s) deleted; cleanup queued", inst.Name, inst.Project)
				if n.ProvisionState == baremetal.StateDeploying {
					msg = fmt.Sprintf("instance %s (project %s) deleted while deploying; deploy cancelled, cleanup queued", inst.Name, inst.Project)
				}
				if n.ProvisionState == baremetal.StateCleaning {
					// Already cleaning: the deletion is still news.
					ch.Events = append(ch.Events, &baremetal.Event{Type: "instance_deleted", Field: "provision_state",
						Old: string(n.ProvisionState), New: string(n.ProvisionState), Message: msg})
					return nil
				}
				ch.Kind, ch.Reason = "instance_deleted", msg
				return n.Transition(baremetal.StateCleaning)
			})
			if err != nil || !cleanup {
				return err
			}
			jobID, err = s.jobs.InsertTx(ctx, tx, jobs.CleanupArgs{NodeID: node.ID, InstanceID: inst.ID})
			return err
		})
	})
	if err != nil {
		return 0, err
	}
	s.log.InfoContext(ctx, "instance deleted", "instance_id", inst.ID, "name", inst.Name, "node_id", inst.NodeID, "cleanup_job_id", jobID, "by", c.Actor())
	return jobID, nil
}

// RebuildInstance rebuilds an instance in place (baremetal.StartRebuild):
// same id, same node, ch's image and user data (the rest kept). The
// instance and its node go back to deploying and the deploy job is queued
// in the same transaction; the caller waits for active as on create. A new
// ready token replaces the old one, so the old config drive's URL and
// readiness callback stop working. o makes it idempotent (see Once): the
// same request again answers with the instance as it is, rebuilding once.
func (s *Service) RebuildInstance(ctx context.Context, c Caller, idOrName string, ifMatch int64, ch baremetal.Rebuild, o Once) (*baremetal.Instance, error) {
	var out *baremetal.Instance
	err := s.ledger.InTx(ctx, func(tx *ledger.Tx) error {
		inst, err := findInstance(ctx, tx, c, idOrName)
		if err != nil {
			return err
		}
		if id, err := replayed(ctx, tx, c, "rebuild", o); err != nil || id != "" {
			if err == nil && id != inst.ID {
				err = baremetal.FieldErrorf("Idempotency-Key", "Idempotency-Key %q was used to rebuild another instance; a new request needs a new key", o.Key)
			}
			out = memberView(c, inst)
			return err
		}
		if ifMatch != 0 && inst.Version != ifMatch {
			return preconditionFailed(ifMatch, inst.Version)
		}
		// The instance's row first, then the node's, as a delete takes
		// them: taken the other way round, a rebuild and a delete of the
		// same instance at once could deadlock on PostgreSQL. The node is
		// read plainly to work out the rebuild; its locked write below
		// checks it again.
		node, err := tx.GetNode(ctx, inst.NodeID)
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return &baremetal.Error{Code: baremetal.CodeConflict, Message: fmt.Sprintf(
				"instance %s's node was deleted: it cannot be rebuilt in place; delete it and create it again", inst.Name)}
		}
		if err != nil {
			return err
		}
		next, probe := *inst, *node
		if err := baremetal.StartRebuild(&probe, &next, ch); err != nil {
			return err
		}
		if next.DeployMethod == baremetal.DeployImage && !s.agent {
			return baremetal.FieldErrorf("deploy_method",
				"instance %s is deployed with deploy_method image, which needs the deploy agent, and this controller serves no agent image (--agent-kernel)", next.Name)
		}
		if err := checkNetwork(ctx, tx, node, &next); err != nil {
			return err
		}
		if ch.Network != nil {
			// Pool entries of the same pools keep their addresses; one no
			// longer asked for stays the node's until the rebuilt OS
			// boots (the old one may run with it till then).
			if err := assignAddresses(ctx, tx, &next, node.ID, poolAddresses(inst.Addresses), tx.ReleaseInstanceAddress); err != nil {
				return err
			}
		}
		next.ReadyToken = newReadyToken()
		next.ReadyTokenHash = HashSecret(next.ReadyToken)
		if err := tx.UpdateInstance(ctx, &next); err != nil {
			return err
		}
		what := rebuildWhat(inst, ch)
		locked, err := tx.GetNodeForUpdate(ctx, node.ID)
		if err != nil {
			return err
		}
		_, _, err = tx.Apply(ctx, locked, c.Actor(), func(_ store.Tx, n *baremetal.Node, chg *ledger.Change) error {
			scratch := *inst
			if err := baremetal.StartRebuild(n, &scratch, ch); err != nil {
				return err
			}
			chg.Reason = fmt.Sprintf("instance %s (project %s) rebuilt in place (rebuild %d, %s): deploying %s",
				next.Name, next.Project, next.Rebuilds, what, baremetal.RedactURL(next.Image.URL))
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := s.jobs.InsertTx(ctx, tx, jobs.DeployArgs{NodeID: next.NodeID, InstanceID: next.ID, Rebuild: next.Rebuilds}); err != nil {
			return err
		}
		out = memberView(c, &next)
		return remember(ctx, tx, c, "rebuild", o, next.ID)
	})
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "instance rebuild started", "instance_id", out.ID, "node_id", out.NodeID, "rebuilds", out.Rebuilds, "by", c.Actor())
	return out, nil
}

// rebuildWhat says what a rebuild changes, for the node's event (never the
// user data itself).
func rebuildWhat(inst *baremetal.Instance, ch baremetal.Rebuild) string {
	var what []string
	if ch.Image != nil && *ch.Image != inst.Image {
		what = append(what, "new image")
	}
	if ch.UserData != nil && *ch.UserData != inst.UserData {
		what = append(what, "new user_data")
	}
	if ch.Network != nil {
		what = append(what, "network as given")
	}
	if len(what) == 0 {
		return "same image, user_data and network"
	}
	return strings.Join(what, ", ")
}

// Capacity says how many instances of a shape (p's resource class and
// requirements) could be placed now for p.Project: the nodes that could
// take one, within what the project's quota leaves (nil: unlimited). A
// member asks for its own project. It reads the nodes a page at a time.
func (s *Service) Capacity(ctx context.Context, c Caller, p baremetal.Placement, deployMethod baremetal.DeployMethod) (capa baremetal.Capacity, msg string, placeable int, quotaLeft *int, err error) {
	if c.Admin() {
		if p.Project == "" {
			return capa, "", 0, nil, baremetal.FieldErrorf("project", "project is required when an admin asks for capacity (nodes owned by other projects do not count)")
		}
	} else {
		if p.Project != "" && p.Project != c.Project {
			return capa, "", 0, nil, forbidden("a member may only ask for capacity in its own project %q", c.Project)
		}
		p.Project = c.Project
	}
	if err := baremetal.ValidateProject("project", p.Project); err != nil {
		return capa, "", 0, nil, err
	}
	if p.ResourceClass != "" {
		if err := baremetal.ValidateResourceClass("resource_class", p.ResourceClass); err != nil {
			return capa, "", 0, nil, err
		}
	}
	if err := p.Requirements.Validate(); err != nil {
		return capa, "", 0, nil, err
	}
	// The instance a deploy of this shape would be: a live deploy needs
	// virtual media only for a config drive, which a plain shape has not.
	inst := &baremetal.Instance{ResourceClass: p.ResourceClass, Requirements: p.Requirements, Project: p.Project,
		DeployMethod: cmp.Or(deployMethod, baremetal.DeployImage)}
	if capa, msg, err = survey(ctx, s.store, p, inst); err != nil {
		return capa, "", 0, nil, err
	}
	placeable = capa.Available
	q, err := s.store.GetQuota(ctx, p.Project)
	if err != nil {
		return capa, "", 0, nil, err
	}
	if q.Instances >= 0 {
		used, err := s.store.CountInstances(ctx, p.Project)
		if err != nil {
			return capa, "", 0, nil, err
		}
		left := max(q.Instances-used, 0)
		quotaLeft = &left
		placeable = min(placeable, left)
	}
	return capa, msg, placeable, quotaLeft, nil
}
