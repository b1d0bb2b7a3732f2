// Package service is the controller's application logic between the HTTP
// API and the store: who may do what, node and instance life cycle,
// scheduling and quotas. Nodes are written through the ledger
// (internal/ledger), which writes the events of every change. Each
// operation is one short store transaction that also enqueues the durable
// job it needs, so a state change never exists without its job.
package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/jobs"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ledger"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// Caller is the authenticated principal of a request.
type Caller struct {
	TokenID string
	// TokenName is the token's name, given at creation: who uses it.
	TokenName string
	Role      baremetal.Role
	Project   string
	// Client is what the request came through (see ClientOf): events name
	// it beside the token. Empty for callers that are not API requests.
	Client string
}

// Admin reports whether the caller has the admin role.
func (c Caller) Admin() bool { return c.Role == baremetal.RoleAdmin }

// Monitor reports whether the caller has the read-only monitor role.
// The HTTP layer lets a monitor through to its few routes only, so the
// service never treats one as a member of the project "".
func (c Caller) Monitor() bool { return c.Role == baremetal.RoleMonitor }

// Actor is how events name the caller: by the token's name, which says
// who, and its id, as a name is free again once its token is revoked;
// then the client the request came through, e.g. "token:alice (<id>) via
// Terraform (terraform-provider-baremetal/0.4.0 terraform/1.5.7)".
func (c Caller) Actor() ledger.Actor {
	a := ledger.NamedToken(c.TokenID, c.TokenName)
	if c.Client == "" {
		return a
	}
	return a + ledger.Actor(" via "+c.Client)
}

// Service implements the API's operations.
type Service struct {
	store  store.Store
	ledger *ledger.Ledger
	jobs   jobs.Inserter
	log    *slog.Logger
	now    func() time.Time
	tokens *tokenCache
	// agent: the controller serves the deploy agent's image (EnableAgent).
	agent bool
	// bmc asks a new Redfish node's BMC which system it is, for at most
	// resolveWithin (ResolveSystemsAtEnroll); nil: the verify job asks.
	bmc           bmc.Opener
	resolveWithin time.Duration
	// verifier verifies at enroll what resolveSystem resolved (nil:
	// the verify job does).
	verifier   EnrollVerifier
	verifyFast time.Duration
}

// New returns a Service over st that enqueues jobs with ins.
func New(st store.Store, ins jobs.Inserter, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, ledger: ledger.New(st, log), jobs: ins, log: log, now: time.Now, tokens: newTokenCache(5 * time.Second)}
}

// Ready checks that the store answers.
func (s *Service) Ready(ctx context.Context) error { return s.store.Ping(ctx) }

func forbidden(format string, args ...any) error {
	return baremetal.Errorf(baremetal.CodeForbidden, format, args...)
}

func requireAdmin(c Caller, what string) error {
	if !c.Admin() {
		return forbidden("only an admin may %s", what)
	}
	return nil
}
