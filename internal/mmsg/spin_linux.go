//go:build linux

package mmsg

import "golang.org/x/sys/unix"

// RecvfromSpin is RecvfromNow made again at once while the socket is
// empty: up to tries non-blocking recvfrom(2) calls (MSG_DONTWAIT |
// MSG_TRUNC), stopping at the first that gets a datagram or fails with
// an errno other than EAGAIN (EINTR counts as EAGAIN). It returns the
// datagram's length and errno 0, or -1 and the last call's errno (EAGAIN
// when every try found the socket empty), and how many calls it made
// (1 to tries; tries below 1 counts as 1). p, name and namelen are as for
// RecvfromNow; the kernel writes *namelen only for a datagram, so the
// size it holds on entry serves every try.
//
// It is the inner loop of a busy poll (the kernel's napi_busy_loop, made
// from user space): on amd64 the tries run in one assembly loop, with
// nothing between one system call and the next but the test of its
// result, so that a datagram that arrives during a probe is taken by the
// next one as soon as the kernel can give it, and the way back to Go
// (several mispredicted returns after a system call on this kind of
// machine, see Raw6) is paid once per datagram, not once per probe.
// Measured on a busy-polling loopback ping-pong of 64-byte datagrams,
// `skb pingpong --busy-poll` client and server as processes pinned to a
// CPU each, six rounds alternating with the build before and with the C
// reference (2026-12-02, a PVM guest where a system call costs about 1.3
// µs): p50 0.957-0.988x the build that probed with one RecvfromNow per
// Poll (median 0.975x), 0.998-1.049x C's (median 1.02x, where that build
// read 1.04-1.07x). Other architectures loop over Raw6 in Go.
//
// The loop has no preemption point: a caller bounds tries so that a
// spin lasts tens of µs at most (32 tries of an empty socket, about 11
// µs at 350 ns a call, 40 µs at 1.3 µs under a hypervisor that makes
// system calls slow), and reaches a preemption point between spins.
func RecvfromSpin(fd int, p []byte, name *unix.RawSockaddrInet6, namelen *uint32, tries int) (n int, errno unix.Errno, calls int) {
	return recvfromSpin(fd, p, name, namelen, max(tries, 1))
}
