package qemu

import (
	"os/exec"
	"syscall"
)

// setDeathSignal kills qemu when the process that started it dies, so a
// crashed test or simulator leaves no virtual machine running. (Linux ties
// it to the forking thread; the Go runtime ends threads only when a
// goroutine exits while locked to one, which nothing here does.)
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
