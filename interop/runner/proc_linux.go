package main

import "syscall"

// dieWithParent makes a child process get SIGKILL when the runner dies,
// so that a killed suite leaves no publisher or client behind.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
