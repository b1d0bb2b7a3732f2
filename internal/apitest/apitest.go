// Package apitest is the one raw-HTTP client of the tests that drive the
// controller's REST API from outside: the handler tests (httpapi), the
// in-process controller tests (app) and the real-process tests
// (controller). It speaks plain net/http, not the apiclient, so a test
// sees exactly the status, headers and bytes a third-party client would.
package apitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// Client calls one API server as one token holder.
type Client struct {
	T     testing.TB
	URL   string // the server's base URL, e.g. httptest.Server.URL
	Token string // sent as a bearer token when not empty
	// Record, when set, receives every response body and header, so a test
	// can check that a secret never appeared in any of them.
	Record io.Writer
}

// Response is what the server answered.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// As returns a copy of c that calls as the holder of token.
func (c Client) As(token string) Client {
	c.Token = token
	return c
}

// Do sends one request; body, when not empty, is sent as JSON. hdr are
// extra header name/value pairs. A transport error fails the test.
func (c Client) Do(method, path, body string, hdr ...string) Response {
	c.T.Helper()
	var rdr io.Reader
	if body != "" {
		rdr = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.URL+path, rdr)
	if err != nil {
		c.T.Fatal(err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.T.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if c.Record != nil {
		_, _ = c.Record.Write(b)
		_, _ = fmt.Fprint(c.Record, res.Header)
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// Call is Do that fails the test unless the status is want, and decodes
// the JSON body into out when out is not nil.
func (c Client) Call(method, path, body string, want int, out any) Response {
	c.T.Helper()
	r := c.Do(method, path, body)
	if r.Status != want {
		c.T.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			c.T.Fatalf("%s %s: decode: %v: %s", method, path, err, r.Body)
		}
	}
	return r
}

// Problem decodes an RFC 9457 problem document and fails the test unless
// it is complete: the problem content type, a status matching the
// response's, a code, a detail and a type ending in the code.
func (r Response) Problem(t testing.TB) api.Problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != api.ProblemContentType {
		t.Fatalf("status %d: content type %q, want problem+json; body %s", r.Status, ct, r.Body)
	}
	var p api.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("problem body: %v: %s", err, r.Body)
	}
	if p.Status != r.Status || p.Code == "" || p.Detail == "" || !strings.HasSuffix(p.Type, string(p.Code)) {
		t.Fatalf("incomplete problem document: %s", r.Body)
	}
	return p
}
