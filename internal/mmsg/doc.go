// Package mmsg is the system-call plumbing for batched socket I/O shared by
// the drivers: preallocated mmsghdr, iovec, address and control arrays for
// sendmmsg(2) and recvmmsg(2), and the raw calls themselves, which allocate
// nothing (unlike the syscall and x/sys/unix wrappers of recvfrom, and x/net's
// ReadBatch). Linux only; elsewhere every call fails with an error wrapping
// errors.ErrUnsupported.
package mmsg
