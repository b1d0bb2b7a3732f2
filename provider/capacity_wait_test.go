package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// TestCreateInstanceWaitsOnTheControllersCounts: whether a create that
// met no capacity waits is the controller's call, made with the counts of
// its 409 (Capacity.Pending), not a rule of the provider's: nodes that
// free up by themselves are waited for, anything else is reported at once,
// and so is a 409 without counts (an older controller).
func TestCreateInstanceWaitsOnTheControllersCounts(t *testing.T) {
	oldMin, oldMax := pollMin, pollMax
	pollMin, pollMax = time.Millisecond, 5*time.Millisecond
	t.Cleanup(func() { pollMin, pollMax = oldMin, oldMax })

	noCapacity := func(detail string, c *api.Capacity) answer {
		return answer{status: 409, body: api.Problem{Type: api.ProblemTypeBase + string(api.CodeNoCapacity), Title: "No capacity",
			Status: 409, Code: api.CodeNoCapacity, Field: "resource_class", Detail: detail, Capacity: c}}
	}
	cleaning := noCapacity(`no node of class "gpu" is available: 1 cleaning`, &api.Capacity{Nodes: 1, Cleaning: 1, Pending: 1})
	// A node cleaning after a failed deploy still carries its fault: the
	// message says faulted, the counts say it frees up.
	faultedCleaning := noCapacity(`no node of class "gpu" is available: 1 faulted (power_mismatch)`, &api.Capacity{Nodes: 1, Fault: 1, Pending: 1})
	// A node being inspected is available again when the agent has
	// reported (or the inspection gave up).
	inspecting := noCapacity(`no node of class "gpu" is available: 1 inspecting`, &api.Capacity{Nodes: 1, Inspecting: 1, Pending: 1})
	maintenance := noCapacity(`no node of class "gpu" is available: 1 in maintenance`, &api.Capacity{Nodes: 1, Maintenance: 1})
	ipmiOnly := noCapacity(`no node of class "gpu" is available: 1 cleaning`, &api.Capacity{Nodes: 1, Cleaning: 1})
	// Requirements no node meets: no wait helps, and the error says per
	// requirement how many nodes fail it.
	unsuited := noCapacity(`no node of class "gpu" fits the instance's requirements: of 40 nodes, 31 lack trait CUSTOM_GPU_A100, `+
		`4 have less than 262144 MB memory (or unknown), 2 are owned by another project`,
		&api.Capacity{Nodes: 40, Unsuited: 37, Busy: 3, Unmet: []api.UnmetRequirement{
			{Requirement: "required_trait", Value: "CUSTOM_GPU_A100", Nodes: 31, Message: "31 nodes lack trait CUSTOM_GPU_A100"}}})
	// Some nodes fit and are being cleaned: only those count.
	unsuitedButCleaning := noCapacity(`no node of class "gpu" fits the instance's requirements: of 3 nodes, 2 lack trait CUSTOM_GPU_A100; `+
		`the 1 that fit cannot take it now: 1 cleaning`, &api.Capacity{Nodes: 3, Unsuited: 2, Cleaning: 1, Pending: 1})
	noCounts := noCapacity(`no node of class "gpu" is available: 1 cleaning`, nil)
	created := answer{status: 201, body: api.Instance{ID: "i1", Name: "web", State: api.InstanceDeploying}}
	unavailable := answer{status: 503, body: api.Problem{Type: api.ProblemTypeBase + "unavailable", Title: "Service unavailable",
		Status: 503, Code: api.CodeUnavailable, Detail: "database unreachable"}}

	for _, tc := range []struct {
		name    string
		answers []answer
		posts   int
		wantErr string // "" = created
	}{
		{"cleaning frees up", []answer{cleaning, cleaning, created}, 3, ""},
		{"a fault left by a failed deploy clears with the cleanup", []answer{faultedCleaning, created}, 2, ""},
		{"an inspection ends in available", []answer{inspecting, created}, 2, ""},
		{"a short database outage while waiting", []answer{cleaning, unavailable, created}, 3, ""},
		{"maintenance needs an operator", []answer{maintenance}, 1, "1 in maintenance"},
		{"a node that can never carry the config drive", []answer{ipmiOnly}, 1, "1 cleaning"},
		{"no counts, no wait", []answer{noCounts}, 1, "1 cleaning"},
		{"requirements no node meets", []answer{unsuited}, 1,
			"of 40 nodes, 31 lack trait CUSTOM_GPU_A100, 4 have less than 262144 MB memory (or unknown), 2 are owned by another project"},
		{"the one node that fits is cleaning", []answer{unsuitedButCleaning, created}, 2, ""},
		{"the last cleaning node went into maintenance", []answer{cleaning, maintenance}, 2, "1 in maintenance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scriptedServer{t: t, answers: tc.answers}
			r := &InstanceResource{client: testClient(t, srv)}
			inst, err := createInstance(context.Background(), r.client, api.InstanceCreate{Name: "web", ResourceClass: "gpu"})
			switch {
			case tc.wantErr == "" && (err != nil || inst == nil || inst.ID != "i1"):
				t.Fatalf("want the instance, got %+v, %v", inst, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, apiclient.ErrNoCapacity)):
				t.Fatalf("want no_capacity %q, got %+v, %v", tc.wantErr, inst, err)
			}
			if got := srv.posts(); got != tc.posts {
				t.Fatalf("%d POSTs, want %d", got, tc.posts)
			}
		})
	}

	t.Run("timeout says what it waited for, with the latest counts", func(t *testing.T) {
		srv := &scriptedServer{t: t, answers: []answer{cleaning, faultedCleaning}} // the last answer repeats
		r := &InstanceResource{client: testClient(t, srv)}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := createInstance(ctx, r.client, api.InstanceCreate{Name: "web", ResourceClass: "gpu"})
		if err == nil || !errors.Is(err, apiclient.ErrNoCapacity) ||
			!strings.Contains(err.Error(), "1 faulted (power_mismatch)") ||
			!strings.Contains(err.Error(), "Waited for nodes being cleaned, verified or inspected to become available") {
			t.Fatalf("got %v", err)
		}
		if srv.posts() < 2 {
			t.Fatalf("%d POSTs: it did not wait", srv.posts())
		}
		// What Terraform shows: the controller's explanation, then what
		// the provider waited for.
		var diags diag.Diagnostics
		addAPIError(&diags, "Could not create instance web", err, instanceAttrs)
		if len(diags) != 1 || !strings.Contains(diags[0].Detail(), "1 faulted (power_mismatch)\n\nWaited for nodes being cleaned") {
			t.Fatalf("diagnostics: %v", diags)
		}
	})
}

type answer struct {
	status int
	body   any
}

// scriptedServer answers POST /v1/instances with its answers in turn,
// repeating the last one.
type scriptedServer struct {
	t       *testing.T
	mu      sync.Mutex
	answers []answer
	n       int
}

func (s *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/instances" {
		s.t.Errorf("unexpected %s %s: the provider asks nothing but the create", r.Method, r.URL.Path)
		http.Error(w, "unexpected", http.StatusTeapot)
		return
	}
	s.mu.Lock()
	a := s.answers[min(s.n, len(s.answers)-1)]
	s.n++
	s.mu.Unlock()
	ct := "application/json"
	if a.status >= 400 {
		ct = api.ProblemContentType
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(a.status)
	_ = json.NewEncoder(w).Encode(a.body)
}

func (s *scriptedServer) posts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func testClient(t *testing.T, h http.Handler) *apiclient.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := apiclient.New(srv.URL, apiclient.Options{Token: "t", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
