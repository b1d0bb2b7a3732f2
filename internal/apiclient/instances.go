package apiclient

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// GetInstance returns the instance with that id or name.
func (c *Client) GetInstance(ctx context.Context, idOrName string) (*api.Instance, error) {
	var in api.Instance
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/instances/" + escape(idOrName), out: &in}); err != nil {
		return nil, err
	}
	return &in, nil
}

// Instances iterates over the instances the token may see. pageSize 0
// leaves the page size to the server.
func (c *Client) Instances(ctx context.Context, pageSize int) iter.Seq2[api.Instance, error] {
	q := url.Values{}
	if pageSize > 0 {
		q.Set("limit", strconv.Itoa(pageSize))
	}
	return pages[api.Instance](ctx, c, "/v1/instances", q)
}

// ListInstances returns every instance the token may see.
func (c *Client) ListInstances(ctx context.Context) ([]api.Instance, error) {
	return collect(c.Instances(ctx, 0))
}

// CreateInstance places an instance on a node and starts deploying it.
// Scheduling failures (no capacity, quota) come back as *APIError whose
// detail explains why.
func (c *Client) CreateInstance(ctx context.Context, in api.InstanceCreate) (*api.Instance, error) {
	var out api.Instance
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/instances", body: in, out: &out, idempotencyKey: newIdempotencyKey()}); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchInstance changes an instance's desired power state or metadata.
func (c *Client) PatchInstance(ctx context.Context, idOrName string, u api.InstanceUpdate) (*api.Instance, error) {
	var out api.Instance
	_, err := c.do(ctx, request{method: http.MethodPatch, path: "/v1/instances/" + escape(idOrName), body: u,
		contentType: mergePatchType, out: &out})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// RebuildInstance rebuilds an instance in place with the image and user
// data of rb (nil fields: the instance's own). The answer is the instance,
// deploying again; it is active when the rebuild is done. Sent with an
// Idempotency-Key: a retry after a lost answer does not rebuild twice.
func (c *Client) RebuildInstance(ctx context.Context, idOrName string, rb api.InstanceRebuild) (*api.Instance, error) {
	var out api.Instance
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/instances/" + escape(idOrName) + "/rebuild", body: rb,
		out: &out, idempotencyKey: newIdempotencyKey()})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteInstance deletes an instance. The server answers once the cleanup
// is durably queued; the instance is gone (404) from then on.
func (c *Client) DeleteInstance(ctx context.Context, idOrName string) (*api.Accepted, error) {
	var a api.Accepted
	if _, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/instances/" + escape(idOrName), out: &a}); err != nil {
		return nil, err
	}
	return &a, nil
}
