//go:build !unix

package storetest

import "time"

// processCPU is not measured here: the benchmarks then report no cpu-µs/op.
func processCPU() (time.Duration, bool) { return 0, false }
