// Package sim is a simulated fleet of Redfish BMCs: one real HTTP(S) server
// hosting N computer systems, each with its own Manager and virtual CD, that
// unmodified Redfish clients (gofish, curl, the redfish driver) talk to.
//
// It exists for tests, demos and benchmarks, so every system can be made to
// misbehave on demand with a Fault:
//
//	down  the connection is closed without an answer (reset/EOF)
//	hang  no answer until the client gives up or the fleet closes
//	slow  the answer comes after Options.SlowDelay
//	error HTTP 500 with a Redfish extended error body
//	auth  HTTP 401, whatever the credentials
//	flap  successive requests alternate between down and healthy
//
// A flapping system answers its healthy turns with "Connection: close", so
// the next request comes on a fresh connection: Go (like most HTTP stacks)
// silently retries an idempotent request that fails on a reused keep-alive
// connection, which would otherwise hide every failing turn.
//
// A fault applies to every request under /redfish/v1/Systems/<id> and under
// the system's Manager /redfish/v1/Managers/<id>; the service root, the
// SessionService and the collections stay healthy, like a shared front end
// in front of individual BMCs.
//
// Authentication accepts HTTP basic auth or an X-Auth-Token from
// POST /redfish/v1/SessionService/Sessions (unless Options.NoSessionService).
//
// A small unauthenticated control API on the same server drives demos:
//
//	GET  /sim/systems                      all systems (id, power, fault, ...)
//	GET  /sim/systems/{id}                 one system
//	POST /sim/systems/{id}/fault           {"fault":"hang"}   ("" or "none" clears)
//	POST /sim/systems/{id}/power           {"power":"On"}     (or "Off")
//	POST /sim/systems/{id}/ignore-power    {"ignore":true}
//	POST /sim/fault                        {"fault":"down"}   every system
//
// Lookups are map based and per-system state has its own lock, so one process
// serves 10,000 systems; only the Systems and Managers collections (and
// GET /sim/systems) are O(N).
package sim
