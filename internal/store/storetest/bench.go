package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// BenchNodes is the fleet size of the benchmarks.
const BenchNodes = 1000

// seedNodes inserts n nodes in one transaction and returns their ids.
func seedNodes(b *testing.B, s store.Store, n int) []string {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, 0, n)
	err := s.InTx(ctx, func(tx store.Tx) error {
		for i := range n {
			node := newNode(fmt.Sprintf("bench-%04d", i))
			node.ProvisionState = baremetal.StateAvailable
			if err := tx.InsertNode(ctx, node); err != nil {
				return err
			}
			ids = append(ids, node.ID)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return ids
}

// startTimer resets b's timer and returns what ends the measurement:
// it reports the rate and the CPU time the process spent per operation
// (cpu-µs/op). On PostgreSQL that is the client's own cost, without the
// server's, and on a busy machine it varies far less than ns/op, whose
// wall time waits on whatever else runs; on SQLite it includes the
// database, which runs in the process.
func startTimer(b *testing.B) (report func()) {
	b.ReportAllocs()
	cpu0, ok := processCPU()
	b.ResetTimer()
	return func() {
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		if cpu1, ok1 := processCPU(); ok && ok1 {
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		}
	}
}

// ProcessCPU is the CPU time this process has used, user and system
// (false where it cannot be known), for benchmarks elsewhere that report
// cpu-µs/op as these do.
func ProcessCPU() (time.Duration, bool) { return processCPU() }

// BenchGetNode measures GetNode by id, in parallel, on a store of
// BenchNodes nodes. The BMC password is decrypted on every read.
func BenchGetNode(b *testing.B, s store.Store) {
	ids := seedNodes(b, s, BenchNodes)
	ctx := context.Background()
	report := startTimer(b)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.GetNode(ctx, ids[(i*7919)%len(ids)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	report()
}

// BenchListNodesPage measures ListNodes pages of 100, in parallel, cycling
// through the pages of BenchNodes nodes with the default filter (which
// hides deleting nodes).
func BenchListNodesPage(b *testing.B, s store.Store) {
	seedNodes(b, s, BenchNodes)
	ctx := context.Background()
	// Collect the cursors first so that every page costs the same.
	cursors := []string{""}
	for {
		_, next, err := s.ListNodes(ctx, store.NodeFilter{Page: store.Page{After: cursors[len(cursors)-1], Limit: 100}})
		if err != nil {
			b.Fatal(err)
		}
		if next == "" {
			break
		}
		cursors = append(cursors, next)
	}
	report := startTimer(b)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			page, _, err := s.ListNodes(ctx, store.NodeFilter{Page: store.Page{After: cursors[i%len(cursors)], Limit: 100}})
			if err != nil || len(page) != 100 {
				b.Errorf("page of %d nodes: %v", len(page), err)
				return
			}
			i++
		}
	})
	report()
}

// BenchUpdateNode measures version-checked UpdateNode (read, modify,
// write; the password is re-sealed) in parallel, each goroutine on its own
// node so that no write conflicts. On SQLite every write takes the single
// writer connection and a durable commit (synchronous=FULL).
func BenchUpdateNode(b *testing.B, s store.Store) {
	ids := seedNodes(b, s, BenchNodes)
	ctx := context.Background()
	var next atomic.Int64
	report := startTimer(b)
	b.RunParallel(func(pb *testing.PB) {
		n, err := s.GetNode(ctx, ids[int(next.Add(1)-1)%len(ids)])
		if err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			n.BMCFailures++
			if err := s.UpdateNode(ctx, n); err != nil {
				b.Error(err)
				return
			}
		}
	})
	report()
}
