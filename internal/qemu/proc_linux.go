package qemu

import (
	"os/exec"
	"syscall"
)

// setDeathSignal kills qemu when the process that started it dies, so a
// crashed test or simulator leaves no virtual machine running.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
