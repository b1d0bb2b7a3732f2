package apiclient

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// CreateIPPool creates an address pool (admin). Sent with an
// Idempotency-Key: a retry after a lost answer returns the pool the first
// attempt created instead of a name conflict.
func (c *Client) CreateIPPool(ctx context.Context, in api.IPPoolCreate) (*api.IPPool, error) {
	var out api.IPPool
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/ip-pools", body: in, out: &out,
		idempotencyKey: newIdempotencyKey()}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetIPPool returns the pool with that id or name.
func (c *Client) GetIPPool(ctx context.Context, idOrName string) (*api.IPPool, error) {
	var out api.IPPool
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/ip-pools/" + escape(idOrName), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// IPPools iterates over every pool. pageSize 0 leaves the page size to
// the server.
func (c *Client) IPPools(ctx context.Context, pageSize int) iter.Seq2[api.IPPool, error] {
	q := url.Values{}
	if pageSize > 0 {
		q.Set("limit", strconv.Itoa(pageSize))
	}
	return pages[api.IPPool](ctx, c, "/v1/ip-pools", q)
}

// ListIPPools returns every pool.
func (c *Client) ListIPPools(ctx context.Context) ([]api.IPPool, error) {
	return collect(c.IPPools(ctx, 0))
}

// PatchIPPool changes a pool (admin): the members of u that are set. A
// non-empty ifMatch is sent as If-Match (a quoted version, "3"). A change
// that would leave held addresses out of the pool is refused (409).
func (c *Client) PatchIPPool(ctx context.Context, idOrName string, u api.IPPoolUpdate, ifMatch string) (*api.IPPool, error) {
	var out api.IPPool
	if _, err := c.do(ctx, request{method: http.MethodPatch, path: "/v1/ip-pools/" + escape(idOrName), body: u,
		contentType: mergePatchType, ifMatch: ifMatch, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteIPPool deletes a pool (admin); one that holds addresses is
// refused (409) until their instances are deleted and their nodes cleaned.
func (c *Client) DeleteIPPool(ctx context.Context, idOrName string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/ip-pools/" + escape(idOrName)})
	return err
}

// IPAllocations iterates over the addresses a pool holds, in address
// order (admin).
func (c *Client) IPAllocations(ctx context.Context, poolIDOrName string, pageSize int) iter.Seq2[api.IPAllocation, error] {
	q := url.Values{}
	if pageSize > 0 {
		q.Set("limit", strconv.Itoa(pageSize))
	}
	return pages[api.IPAllocation](ctx, c, "/v1/ip-pools/"+escape(poolIDOrName)+"/allocations", q)
}
