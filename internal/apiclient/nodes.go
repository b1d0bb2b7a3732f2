package apiclient

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// NodeFilter narrows ListNodes. Zero fields do not filter, but
// IncludeDeleting.
type NodeFilter struct {
	ProvisionState api.ProvisionState
	Maintenance    *bool
	// Fault is one of api.FaultFilters: api.FaultFilterAny (faulted
	// nodes), api.FaultFilterNone (healthy ones) or one fault.
	Fault         string
	ResourceClass string
	// IncludeDeleting lists the nodes being retired (deleting) too. It is
	// always sent, so that the list is the same whatever the server's
	// default (the API lists them unless told not to; older controllers
	// hid them unless told to).
	IncludeDeleting bool
	// Owner lists the nodes a project owns; Schedulable those that can
	// (or cannot) take an instance now; Requirements those whose hardware
	// and traits meet them.
	Owner        string
	Schedulable  *bool
	Requirements api.Requirements
	// PageSize is the page size asked of the server (its default when 0).
	PageSize int
}

func (f NodeFilter) values() url.Values {
	v := url.Values{}
	if f.ProvisionState != "" {
		v.Set("provision_state", string(f.ProvisionState))
	}
	if f.Maintenance != nil {
		v.Set("maintenance", strconv.FormatBool(*f.Maintenance))
	}
	if f.Fault != "" {
		v.Set("fault", f.Fault)
	}
	if f.ResourceClass != "" {
		v.Set("resource_class", f.ResourceClass)
	}
	v.Set("include_deleting", strconv.FormatBool(f.IncludeDeleting))
	if f.Owner != "" {
		v.Set("owner", f.Owner)
	}
	if f.Schedulable != nil {
		v.Set("schedulable", strconv.FormatBool(*f.Schedulable))
	}
	requirementValues(v, f.Requirements)
	if f.PageSize > 0 {
		v.Set("limit", strconv.Itoa(f.PageSize))
	}
	return v
}

// GetNode returns the node with that id or name.
func (c *Client) GetNode(ctx context.Context, idOrName string) (*api.Node, error) {
	n, _, err := c.GetNodeETag(ctx, idOrName)
	return n, err
}

// GetNodeETag returns the node and its ETag, for a later If-Match.
func (c *Client) GetNodeETag(ctx context.Context, idOrName string) (*api.Node, string, error) {
	var n api.Node
	h, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/nodes/" + escape(idOrName), out: &n})
	if err != nil {
		return nil, "", err
	}
	return &n, h.Get("ETag"), nil
}

// Nodes iterates over every node matching f, fetching pages as needed. It
// yields a non-nil error at most once, as its last pair.
func (c *Client) Nodes(ctx context.Context, f NodeFilter) iter.Seq2[api.Node, error] {
	return pages[api.Node](ctx, c, "/v1/nodes", f.values())
}

// ListNodes returns every node matching f, across all pages.
func (c *Client) ListNodes(ctx context.Context, f NodeFilter) ([]api.Node, error) {
	return collect(c.Nodes(ctx, f))
}

// CreateNode enrolls a node.
func (c *Client) CreateNode(ctx context.Context, in api.NodeCreate) (*api.Node, error) {
	var n api.Node
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes", body: in, out: &n, idempotencyKey: newIdempotencyKey()}); err != nil {
		return nil, err
	}
	return &n, nil
}

// PatchNode applies a JSON Merge Patch (an api.NodePatch, a map or any value
// that encodes to a JSON object) to the node. A non-empty ifMatch is sent
// as If-Match: the server then answers 412 (ErrPreconditionFailed) when
// the node changed since that ETag.
func (c *Client) PatchNode(ctx context.Context, idOrName string, patch any, ifMatch string) (*api.Node, error) {
	var n api.Node
	_, err := c.do(ctx, request{method: http.MethodPatch, path: "/v1/nodes/" + escape(idOrName), body: patch,
		contentType: mergePatchType, ifMatch: ifMatch, out: &n})
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// DeleteNode retires a node. The server answers as soon as the work is
// queued; force skips the checks that would refuse it (an instance on it).
func (c *Client) DeleteNode(ctx context.Context, idOrName string, force bool) (*api.Accepted, error) {
	var q url.Values
	if force {
		q = url.Values{"force": {"true"}}
	}
	var a api.Accepted
	if _, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/nodes/" + escape(idOrName), query: q, out: &a}); err != nil {
		return nil, err
	}
	return &a, nil
}

// DeleteUnverifiedNode removes the record of a node still in enroll that
// its controller never got into (force=true&unverified_only=true); a node
// verified meanwhile is a conflict (ErrConflict): delete it as any other.
func (c *Client) DeleteUnverifiedNode(ctx context.Context, idOrName string) (*api.Accepted, error) {
	var a api.Accepted
	q := url.Values{"force": {"true"}, "unverified_only": {"true"}}
	if _, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/nodes/" + escape(idOrName), query: q, out: &a}); err != nil {
		return nil, err
	}
	return &a, nil
}

// ListNodeEvents returns a node's events, oldest first, across all pages.
func (c *Client) ListNodeEvents(ctx context.Context, idOrName string) ([]api.Event, error) {
	return collect(pages[api.Event](ctx, c, "/v1/nodes/"+escape(idOrName)+"/events", nil))
}

// NodePower asks for a power action (one of api.PowerActions).
func (c *Client) NodePower(ctx context.Context, idOrName string, target api.PowerAction) (*api.Accepted, error) {
	var a api.Accepted
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + escape(idOrName) + "/power",
		body: api.PowerRequest{Target: target}, out: &a})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// InspectNode asks for an inspection: the node (available, without an
// instance) boots the deploy agent and reports its hardware. The answer
// names the inspect job; GetNodeInventory reads the result.
func (c *Client) InspectNode(ctx context.Context, idOrName string) (*api.InspectAccepted, error) {
	var a api.InspectAccepted
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + escape(idOrName) + "/inspect", out: &a}); err != nil {
		return nil, err
	}
	return &a, nil
}

// GetNodeInventory returns the hardware the deploy agent last reported
// for the node. A node never inspected is ErrNotFound, like a node that
// does not exist: read the node first to tell them apart.
func (c *Client) GetNodeInventory(ctx context.Context, idOrName string) (*api.NodeInventory, error) {
	var inv api.NodeInventory
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/nodes/" + escape(idOrName) + "/inventory", out: &inv}); err != nil {
		return nil, err
	}
	return &inv, nil
}

// GetNodeConsoleLog returns what the node's serial console printed while
// the controller recorded it (lines > 0: only the last lines).
func (c *Client) GetNodeConsoleLog(ctx context.Context, idOrName string, lines int) (*api.NodeConsoleLog, error) {
	var out api.NodeConsoleLog
	path := "/v1/nodes/" + escape(idOrName) + "/console/log"
	if lines > 0 {
		path += "?lines=" + strconv.Itoa(lines)
	}
	if _, err := c.do(ctx, request{method: http.MethodGet, path: path, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// requirementValues adds r to a query as the API spells it.
func requirementValues(v url.Values, r api.Requirements) {
	for _, t := range r.RequiredTraits {
		v.Add("required_trait", t)
	}
	for _, t := range r.ForbiddenTraits {
		v.Add("forbidden_trait", t)
	}
	for _, m := range []struct {
		name string
		v    int
	}{{"min_cpus", r.MinCPUs}, {"min_memory_mb", r.MinMemoryMB}, {"min_disk_gb", r.MinDiskGB}} {
		if m.v != 0 {
			v.Set(m.name, strconv.Itoa(m.v))
		}
	}
	if r.CPUArch != "" {
		v.Set("cpu_arch", r.CPUArch)
	}
}

// CapacityQuery is a shape of instance GetCapacity counts room for.
type CapacityQuery struct {
	// Project is required of an admin; a member's is its own.
	Project       string
	ResourceClass string
	Requirements  api.Requirements
	// DeployMethod is the deploy's (image when empty).
	DeployMethod api.DeployMethod
}

// GetCapacity says how many instances of a shape the project could place
// now, and why not more.
func (c *Client) GetCapacity(ctx context.Context, q CapacityQuery) (*api.CapacityReport, error) {
	v := url.Values{}
	if q.Project != "" {
		v.Set("project", q.Project)
	}
	if q.ResourceClass != "" {
		v.Set("resource_class", q.ResourceClass)
	}
	if q.DeployMethod != "" {
		v.Set("deploy_method", string(q.DeployMethod))
	}
	requirementValues(v, q.Requirements)
	var out api.CapacityReport
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/capacity", query: v, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
