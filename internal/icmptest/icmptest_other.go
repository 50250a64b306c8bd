//go:build !linux

package icmptest

import "testing"

// OnEachCPU calls check once, where no CPU can be pinned, and reports its
// error with t.Errorf.
func OnEachCPU(t testing.TB, check func() error) {
	t.Helper()
	if err := check(); err != nil {
		t.Error(err)
	}
}

// OutErrors returns -1: there is no /proc/net/snmp to read.
func OutErrors() int64 { return -1 }
