//go:build !linux

package ctl

import "os/exec"

// dieWithParent: only Linux has a parent-death signal; elsewhere CMD
// outlives a ctl that is killed with SIGKILL.
func dieWithParent(*exec.Cmd) {}
