//go:build !linux

package main

import "syscall"

// dieWithParent has no portable equivalent outside Linux: the runner's
// deferred teardown stops its children.
func dieWithParent() *syscall.SysProcAttr { return nil }

// canUnshareMounts: mount namespaces are Linux's.
const canUnshareMounts = false

func inOwnMountNamespace(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
