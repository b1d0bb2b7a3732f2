package testlog

import (
	"strings"
	"sync"
	"testing"
)

// Concurrent writers lose nothing, and reads while they write are safe
// (run with -race to see the second half matter).
func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "x\n"); n != 800 || len(b.Bytes()) != 1600 {
		t.Fatalf("%d lines, %d bytes; want 800, 1600", n, len(b.Bytes()))
	}
}
