//go:build linux

package udp

import (
	"os"
	"os/signal"
	"strings"

	"golang.org/x/sys/unix"
)

// preemptSignals reports whether the runtime can end a raw blocking
// receive with its preemption signal, which Config.KeepP relies on: not
// with asyncpreemptoff=1 in the GODEBUG environment variable (the last
// setting of a name wins, as for the runtime), nor with SIGURG, the
// signal the runtime preempts with, ignored (signal.Ignore), which the
// kernel then discards.
func preemptSignals() bool {
	off := false
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "asyncpreemptoff" {
			off = v == "1"
		}
	}
	return !off && !signal.Ignored(unix.SIGURG)
}
