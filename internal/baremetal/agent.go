package baremetal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"
)

// AgentPurpose is why the controller booted the deploy agent on a node.
type AgentPurpose string

const (
	// AgentInspect: report the hardware, then power off.
	AgentInspect AgentPurpose = "inspect"
	// AgentDeploy: write an instance's image to the root disk.
	AgentDeploy AgentPurpose = "deploy"
	// AgentClean: erase the disks between tenants.
	AgentClean AgentPurpose = "clean"
)

// AgentPurposes lists every purpose.
var AgentPurposes = []AgentPurpose{AgentInspect, AgentDeploy, AgentClean}

// AgentSession is one boot of the deploy agent on a node: the controller
// creates it before booting the agent, and the agent authenticates every
// heartbeat with the session's per-boot token. A node has at most one
// session; a new boot replaces it, which revokes the old token.
type AgentSession struct {
	NodeID  string
	Purpose AgentPurpose
	// Token is the per-boot token (sealed at rest): the agent's boot image
	// carries it, and it is never shown by the API or logged. TokenHash
	// finds the session from a heartbeat.
	Token     string
	TokenHash string
	// Command is the JSON of the command handed out (the API's
	// AgentCommand), "" for none; Status the JSON of the agent's last
	// report on it (AgentCommandStatus), "" before any.
	Command string
	Status  string
	// Inventory is the JSON of the last inventory the agent reported
	// (AgentInventory), "" before the first heartbeat.
	Inventory string
	// BootID is the agent's kernel boot id, as last reported.
	BootID string
	// NetbootIDs are the identities the node may present when it boots
	// the agent from the network (NetbootID forms: its system UUID as the
	// BMC reports it, in the byte orders in use, and its NICs' MACs); the
	// iPXE script endpoint finds the session by them. Empty for a boot
	// from virtual media.
	NetbootIDs []string
	// IdentityIDs are the identities (NetbootID forms) the agent must
	// present in its first report (its inventory's system UUID or a NIC's
	// MAC) before the controller hands it any work: the node's system
	// UUID as its BMC reports it and the UUID and MACs of its last
	// inspection. Empty when none was known at the boot (a virtual media
	// boot of a node never inspected, whose BMC gives no UUID): the first
	// report is then taken, the BMC having booted only its own machine.
	IdentityIDs []string
	// AgentAddr is the source address of the first report that was
	// accepted: the session is bound to it, and reports from any other
	// address are refused. "" until then; a new boot starts unbound.
	AgentAddr string
	// Refused is why the last refused report was refused ("" none): told
	// once in the node's events, and named when the work gives up waiting.
	Refused    string
	LastSeenAt *time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Version    int64
}

// AgentActivity is what the agent of a node's session is doing, as the
// API shows it with the node: the session without its token.
type AgentActivity struct {
	NodeID  string
	Purpose AgentPurpose
	// Command and Status are the session's: the JSON of the command
	// handed out and of the agent's last report on it, "" for none.
	Command    string
	Status     string
	LastSeenAt *time.Time
}

// Inventory is a node's hardware as the agent last reported it.
type Inventory struct {
	NodeID string
	// Data is the JSON of the API's AgentInventory.
	Data        string
	InspectedAt time.Time
}

// AgentTokenPrefix starts every per-boot agent token, so a leaked one is
// recognisable; it authenticates one agent boot's heartbeats, nothing
// else.
const AgentTokenPrefix = "agt_"

// NewAgentToken returns a fresh per-boot agent token and the hash the
// store finds its session by.
func NewAgentToken() (token, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on Linux
	}
	token = AgentTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, AgentTokenHash(token)
}

// AgentTokenHash is the stored hash of an agent token.
func AgentTokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// AgentBootKey is the key in the agent ISO's URL for the boot whose token
// is token: derived from it, so the URL changes every boot and needs no
// state of its own, and the token cannot be recovered from the URL.
func AgentBootKey(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("baremetal agent boot v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// IdempotencyKey records a create carried out under a client's
// Idempotency-Key, so a retry of the same request (its answer was lost)
// gets the object created the first time instead of a name conflict.
// Keys are the token's own: TokenID scopes them.
type IdempotencyKey struct {
	TokenID     string
	Key         string
	Kind        string // "node" or "instance"
	RequestHash string // hex SHA-256 of the request body
	ResourceID  string
	CreatedAt   time.Time
}
