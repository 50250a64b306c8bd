//go:build !linux

package bench

import (
	"context"
	"errors"
)

// rawPingRun is Linux only: the raw system calls it makes are Linux's.
func rawPingRun(ctx context.Context, e *env, iters int, busy bool) (sample, error) {
	return nil, errors.New("Go raw ping-pong: Linux only")
}
