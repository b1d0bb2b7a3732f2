//go:build !linux

// Command netguest is a VM's init, Linux only (see main_linux.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "netguest runs only as a Linux VM's init")
	os.Exit(1)
}
