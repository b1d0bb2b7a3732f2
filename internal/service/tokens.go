package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// TokenPrefix starts every secret so leaked tokens are easy to find by
// secret scanners.
const TokenPrefix = "bmt_"

// NewSecret returns a fresh random token secret.
func NewSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on Linux
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret is how secrets are stored: hex SHA-256. Secrets are 256-bit
// random values, so a fast hash is enough (no password stretching needed).
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

var errBadToken = baremetal.Errorf(baremetal.CodeUnauthorized, "missing, unknown or expired bearer token")

// tokenCache keeps recently authenticated tokens for a few seconds so a
// GET costs one query, not two. Deleting a token evicts it at once here;
// other replicas notice within the TTL.
type tokenCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cachedToken
}

type cachedToken struct {
	tok     *baremetal.Token
	expires time.Time
}

func newTokenCache(ttl time.Duration) *tokenCache {
	return &tokenCache{ttl: ttl, m: map[string]cachedToken{}}
}

func (c *tokenCache) get(hash string, now time.Time) *baremetal.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || now.After(e.expires) {
		return nil
	}
	return e.tok
}

func (c *tokenCache) put(hash string, t *baremetal.Token, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 10000 {
		clear(c.m)
	}
	c.m[hash] = cachedToken{tok: t, expires: now.Add(c.ttl)}
}

func (c *tokenCache) evict(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.m {
		if e.tok.ID == id {
			delete(c.m, h)
		}
	}
}

// Authenticate resolves a bearer secret to a caller.
func (s *Service) Authenticate(ctx context.Context, secret string) (Caller, error) {
	if secret == "" || len(secret) > 256 {
		return Caller{}, errBadToken
	}
	now := s.now()
	hash := HashSecret(secret)
	tok := s.tokens.get(hash, now)
	if tok == nil {
		var err error
		tok, err = s.store.GetTokenByHash(ctx, hash)
		if baremetal.IsCode(err, baremetal.CodeNotFound) {
			return Caller{}, errBadToken
		}
		if err != nil {
			return Caller{}, err
		}
		s.tokens.put(hash, tok, now)
	}
	if tok.Expired(now) {
		return Caller{}, errBadToken
	}
	return Caller{TokenID: tok.ID, TokenName: tok.Name, Role: tok.Role, Project: tok.Project}, nil
}

// TokenInput is what an admin asks for.
type TokenInput struct {
	Name      string
	Role      baremetal.Role
	Project   string
	ExpiresAt *time.Time
}

// CreateToken makes a token and returns it with its secret (shown once).
func (s *Service) CreateToken(ctx context.Context, c Caller, in TokenInput) (*baremetal.Token, string, error) {
	if err := requireAdmin(c, "manage tokens"); err != nil {
		return nil, "", err
	}
	switch in.Role {
	case baremetal.RoleAdmin, baremetal.RoleMonitor:
		if in.Project != "" {
			return nil, "", baremetal.FieldErrorf("project", "project applies only to role member")
		}
	case baremetal.RoleMember:
		if in.Project == "" {
			return nil, "", baremetal.FieldErrorf("project", "project is required for role member")
		}
		if err := baremetal.ValidateProject("project", in.Project); err != nil {
			return nil, "", err
		}
	default:
		return nil, "", baremetal.FieldErrorf("role", "role %q must be \"admin\", \"member\" or \"monitor\"", in.Role)
	}
	if err := baremetal.ValidateLine("name", in.Name, 128); err != nil {
		return nil, "", err
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.now()) {
		return nil, "", baremetal.FieldErrorf("expires_at", "expires_at must be in the future")
	}
	if strings.TrimSpace(in.Name) == "" {
		return nil, "", baremetal.FieldErrorf("name", "name is required: say who or what uses the token (e.g. alice, ci-deploy); events name the token by it")
	}
	secret := NewSecret()
	t := &baremetal.Token{Name: in.Name, Role: in.Role, Project: in.Project, Hash: HashSecret(secret), ExpiresAt: in.ExpiresAt}
	if err := s.store.InsertToken(ctx, t); err != nil {
		return nil, "", err
	}
	s.log.InfoContext(ctx, "token created", "token_id", t.ID, "name", t.Name, "role", t.Role, "project", t.Project, "by", c.Actor())
	return t, secret, nil
}

// ListTokens lists tokens (without secrets).
func (s *Service) ListTokens(ctx context.Context, c Caller, p store.Page) ([]*baremetal.Token, string, error) {
	if err := requireAdmin(c, "manage tokens"); err != nil {
		return nil, "", err
	}
	return s.store.ListTokens(ctx, p)
}

// DeleteToken revokes a token.
func (s *Service) DeleteToken(ctx context.Context, c Caller, id string) error {
	if err := requireAdmin(c, "manage tokens"); err != nil {
		return err
	}
	if err := s.store.DeleteToken(ctx, id); err != nil {
		return err
	}
	s.tokens.evict(id)
	s.log.InfoContext(ctx, "token deleted", "token_id", id, "by", c.Actor())
	return nil
}

// Bootstrap makes sure an admin can log in on a first start, and only
// then: when the store holds no token at all. With a configured secret it
// creates that token; without one it generates a secret and writes it to
// tokenFile (mode 0600). It returns the file written, if any.
//
// On any later start the configured secret is ignored, and the log says
// so: a bootstrap-admin token that was revoked stays revoked even though
// the same --bootstrap-token is still in the service's configuration.
func (s *Service) Bootstrap(ctx context.Context, secret, tokenFile string) (string, error) {
	if secret != "" && !strings.HasPrefix(secret, TokenPrefix) && len(secret) < 16 {
		return "", errors.New("bootstrap token must be at least 16 characters")
	}
	n, err := s.store.CountTokens(ctx)
	if err != nil {
		return "", err
	}
	if n > 0 {
		if secret != "" {
			s.ignoredBootstrap(ctx, secret)
		}
		return "", nil
	}
	if secret != "" {
		err := s.store.InsertToken(ctx, &baremetal.Token{Name: "bootstrap-admin", Role: baremetal.RoleAdmin, Hash: HashSecret(secret)})
		if baremetal.IsCode(err, baremetal.CodeConflict) {
			return "", nil // a replica starting at the same time created it
		}
		if err == nil {
			s.log.InfoContext(ctx, "created the bootstrap admin token from --bootstrap-token on first start")
		}
		return "", err
	}
	secret = NewSecret()
	if err := os.MkdirAll(filepath.Dir(tokenFile), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := s.store.InsertToken(ctx, &baremetal.Token{Name: "bootstrap-admin", Role: baremetal.RoleAdmin, Hash: HashSecret(secret)}); err != nil {
		_ = os.Remove(tokenFile)
		return "", err
	}
	return tokenFile, nil
}

// ignoredBootstrap logs that --bootstrap-token had no effect. Restarting
// with the flag still set is normal (it stays in a unit file); that the
// token is not there (revoked) is worth a warning: an operator relying on
// it cannot log in with it.
func (s *Service) ignoredBootstrap(ctx context.Context, secret string) {
	_, err := s.store.GetTokenByHash(ctx, HashSecret(secret))
	switch {
	case err == nil:
		s.log.InfoContext(ctx, "--bootstrap-token ignored: it creates the first admin token on a first start only, and tokens exist")
	case baremetal.IsCode(err, baremetal.CodeNotFound):
		s.log.WarnContext(ctx, "--bootstrap-token ignored: it creates the first admin token on a first start only; "+
			"tokens exist and this one is not among them (revoked?), so it does not authenticate")
	default:
		s.log.WarnContext(ctx, "--bootstrap-token ignored: it creates the first admin token on a first start only", "err", err)
	}
}

// GetQuota returns a project's quota and usage.
func (s *Service) GetQuota(ctx context.Context, c Caller, project string) (*baremetal.Quota, int, error) {
	if !c.Admin() && c.Project != project {
		return nil, 0, forbidden("a member may only read its own project's quota")
	}
	if err := baremetal.ValidateProject("project", project); err != nil {
		return nil, 0, err
	}
	q, err := s.store.GetQuota(ctx, project)
	if err != nil {
		return nil, 0, err
	}
	used, err := s.store.CountInstances(ctx, project)
	return q, used, err
}

// SetQuota sets a project's instance quota (-1 = unlimited).
func (s *Service) SetQuota(ctx context.Context, c Caller, q baremetal.Quota) error {
	if err := requireAdmin(c, "set quotas"); err != nil {
		return err
	}
	if err := q.Validate(); err != nil {
		return err
	}
	return s.store.SetQuota(ctx, &q)
}
