// Package sim is a simulated fleet of Redfish BMCs: one real HTTP(S) server
// hosting N computer systems, each with its own Manager and virtual media
// slots (by default a CD and a USB stick; Options.MediaSlots), that
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
//	POST /sim/systems/{id}/os              {"enabled":false}  the simulated OS never calls back
//	POST /sim/fault                        {"fault":"down"}   every system
//
// Virtual media: inserting into a slot that holds an image answers 409
// (eject first). Slots other than CDs fetch the image at insert time, as
// iDRAC and sushy-tools do (Options.FetchCDMedia: CDs too), with a 10 s
// timeout and no TLS verification; an image that cannot be fetched fails
// the insert with 400 and a Redfish message naming the failure. Boot CD
// images are not fetched, so tests can use made-up image URLs.
//
// The simulated OS: when a system's power comes on (a change from off, or a
// ForceRestart/PowerCycle, once Options.PowerDelay has passed) and a slot
// holds a fetched config drive (internal/configdrive) with a ready URL, the
// system waits Options.OSBootDelay and POSTs that URL with
// "Authorization: Bearer <token>" and an empty body, as the drive's
// vendor-data script would, retrying connection errors and 5xx every second
// (30 tries) and stopping at 2xx or 4xx. Once per power-on; powering off,
// SetOS(id, false) and Close cancel it. OS and the control API report the
// outcome (ready_calls, last_status).
//
// Dialects: Options.Dialect = DialectSushy imitates sushy-tools (OpenStack's
// Redfish emulator) where it differs from the standard: the boot override
// always reads back Continuous, clearing it needs a target, VirtualMedia
// lives under the system, InsertMedia fetches every image and answers 500
// when it cannot (see DialectSushy).
//
// Lookups are map based and per-system state has its own lock, so one process
// serves 10,000 systems; only the Systems and Managers collections (and
// GET /sim/systems) are O(N).
package sim
