//go:build !linux

package dnspub

import "testing"

func haveInotify(*testing.T) bool { return false }
