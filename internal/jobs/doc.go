// Package jobs is the controller's durable work on River: one args+worker
// pair per kind (verify, deploy, cleanup, power, retire, sync_node), plus
// the periodic power sync. Jobs are enqueued with InsertTx in the same
// transaction as the state change that needs them, so neither can exist
// without the other; River's tables live in the store's database, SQLite or
// PostgreSQL, behind one generic adapter (queue.go).
//
// # Rules every job follows
//
//   - Maintenance is the operator's. No code path here sets it; the single
//     write path of nodes (internal/ledger) refuses it to the controller.
//     A node in maintenance is still observed (power sync, sync_node) but
//     not acted on: mutating jobs snooze (wait without using an attempt)
//     and resume when it ends.
//   - BMC trouble is a fault (faults.go): counted, backed off, raised after
//     FaultThreshold failures, cleared by the first success with a
//     "BMC reachable again after …" event. A BMC that answers is not
//     unreachable: a request it refuses in every form is bmc_refused at
//     once, retried slowly, cleared when that work succeeds (answers.go),
//     and an answer about the deploy's image fails the instance, not the
//     node (deployimage.go).
//   - One mutating job per node at a time (exclusive.go).
//   - Every node write goes through the ledger: it re-reads the node in a
//     short transaction, retries on a version conflict, and records one
//     event per changed field, actor "controller". Outcomes (deploy
//     finished or failed, cleaned) are the domain's pure functions
//     (baremetal.FinishDeploy, ...), shared with the service.
//   - A node's work (deploy, cleanup, inspect, retire) is a flow: a
//     declared list of small, idempotent steps, run by one engine
//     (flow.go) inside its kind's job, each step written on the node as
//     it starts, so the work resumes at its step after a retry, a wait or
//     a crash, on any replica. A flow lives beside its worker (deploy.go,
//     deploydisk.go, cleanup.go, inspect.go, retire.go); verify, power
//     and sync_node are single actions. What several kinds do is
//     nodeWork's (workers.go, bmcops.go, faults.go, agentwork.go); Runner
//     is wiring.
//   - Transactions hold no BMC call: BMC calls happen first, the write
//     after, so SQLite's single writer is never held for a BMC's timeout.
//
// # Power sync, across replicas
//
// Every PowerSyncInterval River's elected leader (one per database, so one
// among all replicas) enqueues a power_sync job, unique per period so a
// leadership change cannot double a pass. The replica that takes it lists
// the nodes that are due (NextCheckAt not in the future; those being
// retired included) and enqueues them as power_sync_batch jobs of
// PowerSyncBatchSize node ids in the power_sync queue. Any replica takes
// batches; River hands each job to exactly one, so each node is read by
// exactly one replica per pass, and the load spreads by itself over
// however many replicas run. If a pass is
// still running when the next is due, the next one is skipped rather than
// piled up. A replica that dies mid-batch leaves the batch to River's
// rescuer; the next pass covers it in any case (reads are idempotent).
//
// Within a process, reads are bounded by PowerSyncWorkers slots with a
// BMCTimeout each; a read still unanswered after a short straggler
// threshold yields its slot. A batch does not wait for such reads: it
// hands them to the process's late writer and finishes, so a hung BMC
// costs its batch nothing and the pass takes about the healthy time, its
// hung reads ending within one BMCTimeout. Afterwards dead BMCs back off
// and are skipped, until they answer again: a read that succeeds after
// failures clears the node's fault, wakes its waiting jobs (a retire, a
// cleanup, a deploy backing off) at once, and has the nodes backing off
// behind the same BMC read at once too. Observed power states are written
// only when they change. The replica that fanned a pass out waits for its batches and
// observes baremetal_power_sync_pass_duration_seconds.
//
// SyncPass runs the same pass in-process (tests, benchmarks); Sync and the
// sync_node job read one node at once, ignoring its backoff.
package jobs
