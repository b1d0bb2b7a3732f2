// Package baremetal holds the domain of the controller: nodes, instances,
// provision states and their allowed transitions, faults, roles, and the
// error type with stable codes that every other package returns.
//
// Two rules live here because every package must obey them:
//
//   - Maintenance is an operator-only flag. Nothing in the controller sets it;
//     only an admin request does, with a reason.
//   - Faults are controller-only. They record BMC trouble, keep a node out of
//     scheduling, and clear themselves on the first successful BMC call.
package baremetal
