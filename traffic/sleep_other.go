//go:build !linux

package traffic

import "time"

// sleep blocks for d.
func sleep(d time.Duration) { time.Sleep(d) }
