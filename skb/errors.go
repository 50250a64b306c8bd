package skb

import "errors"

var (
	// ErrRange is returned when a byte range given does not lie inside the
	// buffer: by CopyBits (the kernel's skb_copy_bits returns -EFAULT),
	// PskbMayPull for more bytes than the buffer holds, and
	// SetChecksumPartial for a checksum field outside the linear data.
	ErrRange = errors.New("skb: byte range outside the buffer")

	// ErrTooBig is returned by allocators when no size class holds the requested
	// number of bytes, and by the operations that reallocate (ExpandHead,
	// CowHead, CopyExpand and those built on them) when the sizes given add up
	// to more than any block holds, or overflow an int; nothing is allocated
	// then.
	ErrTooBig = errors.New("skb: buffer larger than the largest size class")
)
