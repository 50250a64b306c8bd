//go:build !linux

package mmsg

import (
	"errors"
	"fmt"
)

var errUnsupported = fmt.Errorf("mmsg: sendmmsg and recvmmsg need Linux: %w", errors.ErrUnsupported)

// Batch is empty on platforms other than Linux.
type Batch struct{ CtrlLen int }

// NewBatch returns an empty batch.
func NewBatch(n int, names bool, ctrlLen int) *Batch { return &Batch{} }

// Sendmmsg fails with an error wrapping errors.ErrUnsupported.
func Sendmmsg(fd int, b *Batch, n, flags int) (int, error) { return 0, errUnsupported }

// Recvmmsg fails with an error wrapping errors.ErrUnsupported.
func Recvmmsg(fd int, b *Batch, n, flags int) (int, error) { return 0, errUnsupported }
