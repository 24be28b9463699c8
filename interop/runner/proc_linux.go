package main

import "syscall"

// dieWithParent makes a child process get SIGKILL when the runner dies,
// so that a killed suite leaves no publisher or client behind.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// canUnshareMounts says whether inOwnMountNamespace works here.
const canUnshareMounts = true

// inOwnMountNamespace starts the child in a new mount namespace (Go makes
// its mounts private), so that what it mounts is seen by it alone.
func inOwnMountNamespace(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Unshareflags |= syscall.CLONE_NEWNS
	return a
}
