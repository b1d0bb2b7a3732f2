package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// ListTokens returns the API tokens (never their secrets), across all pages.
func (c *Client) ListTokens(ctx context.Context) ([]api.Token, error) {
	return collect(pages[api.Token](ctx, c, "/v1/tokens", nil))
}

// CreateToken creates an API token. The secret is in the answer only.
func (c *Client) CreateToken(ctx context.Context, in api.TokenCreate) (*api.TokenCreated, error) {
	var out api.TokenCreated
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/tokens", body: in, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteToken revokes a token.
func (c *Client) DeleteToken(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/tokens/" + escape(id)})
	return err
}

// GetQuota returns a project's quota and usage.
func (c *Client) GetQuota(ctx context.Context, project string) (*api.Quota, error) {
	var q api.Quota
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/quotas/" + escape(project), out: &q}); err != nil {
		return nil, err
	}
	return &q, nil
}

// PutQuota sets a project's quota (Instances -1 = unlimited).
func (c *Client) PutQuota(ctx context.Context, q api.Quota) (*api.Quota, error) {
	var out api.Quota
	// The body is the quota alone: the project is the path's, and the
	// API refuses members it does not take (project, used).
	body := struct {
		Instances int `json:"instances"`
	}{q.Instances}
	_, err := c.do(ctx, request{method: http.MethodPut, path: "/v1/quotas/" + escape(q.Project), body: body, out: &out})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// JobFilter narrows ListJobs.
type JobFilter struct {
	NodeID string
	State  string
}

// ListJobs returns durable jobs.
func (c *Client) ListJobs(ctx context.Context, f JobFilter) ([]api.Job, error) {
	q := url.Values{}
	if f.NodeID != "" {
		q.Set("node_id", f.NodeID)
	}
	if f.State != "" {
		q.Set("state", f.State)
	}
	var out api.JobList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs", query: q, out: &out}); err != nil {
		return nil, err
	}
	return out.Items, nil
}
