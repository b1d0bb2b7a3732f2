//go:build !linux

package agent

import (
	"fmt"
	"os"
	"time"
)

// Init exists only so the controller builds everywhere: the agent image
// runs Linux.
func Init(string) {
	for {
		fmt.Fprintln(os.Stderr, "agent: only runs on Linux")
		time.Sleep(time.Minute)
	}
}
