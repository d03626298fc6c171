package ctl

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill CMD if ctl dies without releasing the
// lock (SIGKILL, a crash): the session then expires after its TTL, and CMD
// must not run on unprotected. (Pdeathsig follows the OS thread that
// started the child; ctl never locks goroutines to threads, so the Go
// runtime keeps that thread for the life of the process.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
