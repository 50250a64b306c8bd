package skb

import "errors"

var (
	// ErrRange is returned by CopyBits and PskbTrim when the requested byte range
	// does not lie inside the buffer (the kernel's skb_copy_bits returns -EFAULT).
	ErrRange = errors.New("skb: byte range outside the buffer")

	// ErrTooManyFrags is returned when an operation would need more than MaxFrags
	// page fragments.
	ErrTooManyFrags = errors.New("skb: too many page fragments")

	// ErrTooBig is returned by allocators when no size class holds the requested
	// number of bytes, and by the operations that reallocate (ExpandHead,
	// CowHead, CopyExpand and those built on them) when the sizes given add up
	// to more than any block holds, or overflow an int; nothing is allocated
	// then.
	ErrTooBig = errors.New("skb: buffer larger than the largest size class")
)
