package bench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawPingRun runs the C reference's ping-pong in Go without skb, as the
// floor of what Go gets from the same system calls: on loopback, a server
// goroutine on the receiver CPU receives with recvfrom and answers each
// datagram with sendto to its source; a client goroutine on the sender CPU
// sends a 64-byte request with send on its connected socket, receives the
// answer with recv, and times the round trip from just before the send to
// just after the recv, warmup round trips first (n/10, at most 1000), as
// pingpong.c does. With busy both receives spin with MSG_DONTWAIT, as
// pingpong -y; without it they block, each for at most rawSlice, as
// pingpong without -y. The calls go straight to the kernel (RawSyscall6: no
// scheduler bookkeeping, the P kept while a receive sleeps), into one
// buffer each, from threads with private descriptor tables, as skb's
// goroutines run (datapath). The percentiles are taken as C takes them
// (sorted, element n*q).
func rawPingRun(ctx context.Context, e *env, iters int, busy bool) (sample, error) {
	srv, err := rawUDP([4]byte{}, nil) // the wildcard, as pingpong.c binds
	if err != nil {
		return nil, err
	}
	defer unix.Close(srv)
	sa, err := unix.Getsockname(srv)
	if err != nil {
		return nil, fmt.Errorf("getsockname: %w", err)
	}
	sin, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return nil, fmt.Errorf("getsockname: %T, want an IPv4 address", sa)
	}
	cli, err := rawUDP([4]byte{127, 0, 0, 1}, &unix.SockaddrInet4{Port: sin.Port, Addr: [4]byte{127, 0, 0, 1}})
	if err != nil {
		return nil, err
	}
	defer unix.Close(cli)
	flags := uintptr(unix.MSG_DONTWAIT)
	if !busy {
		// Blocking receives, each bounded so that the ends can look at
		// stop and let the runtime in.
		flags = 0
		tv := unix.NsecToTimeval(rawSlice.Nanoseconds())
		for _, fd := range []int{srv, cli} {
			if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
				return nil, fmt.Errorf("setsockopt SO_RCVTIMEO: %w", err)
			}
		}
	}
	var stop atomic.Bool
	started := make(chan struct{})
	srvDone := datapath(e.receiver, func() {
		close(started)
		rawEcho(srv, flags, &stop)
	})
	// The server runs before the client starts, which then spins: with
	// both Ps busy a server not yet scheduled could wait long for one.
	<-started
	var rtt []time.Duration
	var cliErr error
	<-datapath(e.sender, func() { rtt, cliErr = rawPings(ctx, cli, flags, iters, 4*e.dur+time.Second) })
	stop.Store(true)
	<-srvDone
	if cliErr != nil {
		return nil, cliErr
	}
	if len(rtt) == 0 {
		return nil, errNoPackets("Go raw ping-pong")
	}
	var sum time.Duration
	for _, d := range rtt {
		sum += d
	}
	slices.Sort(rtt)
	n := len(rtt)
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return sample{"p50": us(rtt[n/2]), "p99": us(rtt[n*99/100]), "mean": us(sum / time.Duration(n))}, nil
}

// rawUDP returns a UDP socket bound to addr (port chosen by the kernel),
// connected to peer unless peer is nil.
func rawUDP(addr [4]byte, peer unix.Sockaddr) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: addr}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind %v: %w", netip.AddrFrom4(addr), err)
	}
	if peer != nil {
		if err := unix.Connect(fd, peer); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("connect: %w", err)
		}
	}
	return fd, nil
}

// rawEcho answers every datagram on fd from 127.0.0.0/8 to its source (as
// skb's echo server with EchoConfig.From; the socket is bound to the
// wildcard) until stop is set, looking at stop every 1024th empty poll.
func rawEcho(fd int, flags uintptr, stop *atomic.Bool) {
	var buf [2048]byte
	var from unix.RawSockaddrInet4
	for spins := 0; ; spins++ {
		fl := uint32(unsafe.Sizeof(from))
		n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
			flags, uintptr(unsafe.Pointer(&from)), uintptr(unsafe.Pointer(&fl)))
		if e != 0 {
			if flags == 0 || spins&1023 == 0 {
				if stop.Load() {
					return
				}
				yield()
			}
			continue
		}
		if from.Addr[0] != 127 {
			continue
		}
		unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), n, 0,
			uintptr(unsafe.Pointer(&from)), uintptr(fl))
	}
}

// rawSlice bounds each blocking receive of the raw ping-pong without
// busy polling.
const rawSlice = 10 * time.Millisecond

// yield lets the runtime stop the spinning goroutine now and then: a loop
// that only makes raw system calls has no point where the runtime can
// preempt it, and a garbage collection waiting to stop the world would
// hold the other side of the ping-pong stopped meanwhile (for seconds, in
// the bench's process).
func yield() { runtime.Gosched() }

// errRawNoReply is the raw ping-pong's error when a request got no answer.
var errRawNoReply = errors.New("Go raw ping-pong: no reply")

// rawPings makes warmup plus iters round trips of 64 bytes on the
// connected socket fd and returns the measured ones' times; it gives up
// after limit, or when a reply takes over a second or ctx is done.
func rawPings(ctx context.Context, fd int, flags uintptr, iters int, limit time.Duration) ([]time.Duration, error) {
	var buf [2048]byte
	const size = 64
	warm := min(iters/10, 1000)
	rtt := make([]time.Duration, 0, iters)
	base := time.Now()
	for i := -warm; i < iters; i++ {
		t0 := time.Since(base)
		if t0 > limit || ctx.Err() != nil {
			break
		}
		if _, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), size, 0, 0, 0); e != 0 {
			return rtt, fmt.Errorf("Go raw ping-pong: send: %w", e)
		}
		for spins := 1; ; spins++ {
			_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
				flags, 0, 0)
			if e == 0 {
				break
			}
			if e != unix.EAGAIN && e != unix.EINTR {
				return rtt, fmt.Errorf("Go raw ping-pong: recv: %w", e)
			}
			if flags == 0 || spins&1023 == 0 {
				if time.Since(base)-t0 > time.Second {
					return rtt, errRawNoReply
				}
				yield()
			}
		}
		if t1 := time.Since(base); i >= 0 {
			rtt = append(rtt, t1-t0)
		}
	}
	return rtt, nil
}
