package udp

import (
	"math"
	"net/netip"
	"time"

	"github.com/skbdev/skb/netdev"
)

// Config configures a Device. The zero Config opens an unconnected
// dual-stack socket that the kernel binds at its first send (a sender whose
// datagrams go where SetDst or XmitTo say); a receiver sets Local.
// netdev.Config's fields (Pool, Headroom, Copybreak, Batch) keep their
// meaning and defaults.
type Config struct {
	netdev.Config

	// Local is the address the socket binds to (bind(2)). Its zero value
	// leaves the choice to the kernel at the first send (an ephemeral port
	// on the address the route picks). An unspecified address (0.0.0.0 or
	// ::) with a port receives on every address. The IPv6 unspecified
	// address makes a dual-stack socket (IPV6_V6ONLY off) that also sends to
	// and receives from IPv4 peers. An unconnected sender is faster bound
	// to the unspecified address (or not bound) than to one address: with
	// a source address pinned, the kernel's route lookup of every datagram
	// also checks that the address is this host's (IPv4: __ip_dev_find),
	// about 5% of a 64-datagram batch on loopback.
	Local netip.AddrPort

	// Remote, when set, connects the socket (connect(2)): Xmit sends there,
	// and only datagrams from Remote are received. Its zero value leaves the
	// socket unconnected: each datagram then goes where SetDst last pointed
	// or where XmitTo says.
	Remote netip.AddrPort

	// GSO turns on UDP segmentation offload (UDP_SEGMENT, Linux 4.18): a
	// doorbell sends a run of equal-size datagrams to one destination as one
	// message, and Xmit accepts GSO super-packets (skb.GSOUDPL4). The kernel
	// support is probed at Open. A GSO send that fails with EIO turns it
	// off for the socket (counted in gso_fallback_eio) and the batch is sent
	// again plainly; one that fails with EINVAL or EMSGSIZE is sent again
	// plainly, and GSO is turned off (counted in gso_fallback_<reason>) only
	// when the first of its datagrams then goes: one the kernel refuses
	// plainly too (its route, its source, its size) leaves GSO on.
	GSO bool

	// GRO turns on UDP receive coalescing (UDP_GRO, Linux 5.0): the kernel
	// delivers a train of datagrams from one flow as one message, which Poll
	// splits back into one buffer per datagram. Receive buffers then come
	// from the pool's largest class (64 KiB trains). Refused by the kernel,
	// it stays off and gso_fallback_unsupported counts it.
	//
	// A segment shorter than the copybreak threshold is copied into a
	// buffer of its own with the device's headroom; a longer one is a
	// clone sharing the train's block (skb_segment_list's clones), which
	// must not be written: a forwarder pushing a header on it calls
	// CowHead first, which copies it. One that pushes headers on every
	// segment does as well to raise Copybreak above its segment size
	// (one copy either way, without the clone), as far as Open lets it:
	// copybreak copies into the pool's classes below the receive block,
	// so it is capped at the largest of them less the headroom, plus one
	// (1921 bytes with the default pool and headroom).
	GRO bool

	// SndBuf and RcvBuf size the socket's send and receive buffers, in bytes
	// (0 keeps the kernel's default, net.core.wmem_default and
	// rmem_default). They are set with SO_SNDBUFFORCE and SO_RCVBUFFORCE,
	// which pass the sysctl limits but need CAP_NET_ADMIN, falling back to
	// SO_SNDBUF and SO_RCVBUF, which the kernel caps at wmem_max and
	// rmem_max. The kernel doubles the value for its bookkeeping (socket(7))
	// and caps it at 1 GiB; a value over MaxSockBuf, which the option's
	// 32-bit int cannot carry, is refused with ErrConfig.
	SndBuf, RcvBuf int

	// BusyPoll makes Wait spin instead of sleeping: it polls the socket
	// without blocking until a datagram arrives or the timeout passes, which
	// saves the wake-up of a sleeping receiver (tens of microseconds on a
	// virtual machine) at the cost of a busy CPU. A positive value is also
	// set as SO_BUSY_POLL (rounded to microseconds), so that the kernel polls
	// the device queue under the socket, where the device supports it (not
	// loopback); when raising it is not permitted (it needs CAP_NET_ADMIN
	// above net.core.busy_read) the spinning stays and the option is
	// skipped. Zero means Wait sleeps. The method Device.BusyPoll spins
	// whatever this says, in user space alone: only this field sets
	// SO_BUSY_POLL.
	BusyPoll time.Duration

	// KeepP makes Wait sleep in the kernel without handing the calling
	// goroutine's P (the Go scheduler's slot for running Go code, GOMAXPROCS
	// of them) to another thread, as a busy-polling loop keeps it. It is
	// for a datapath goroutine on a thread of its own (netdev.RunOnThread):
	// otherwise the scheduler's monitor takes the P of a receive that sleeps
	// for more than 20 µs, wakes another thread to hold it, and the receiver
	// must take a P back on every wake-up. That work ran on the receiver's
	// CPU, beside it. On loopback with the sender at one datagram per call
	// (about 300 kpps), the runtime's monitor thread of a pinned skb sink
	// took 3-5 ms of CPU per 2.2 s with KeepP against 158-166 ms without,
	// and the sink 13% less CPU per datagram; a sender and sink in one
	// process moved 1.05x the datagrams per second (20 rotated rounds,
	// ahead in 15). See docs/BENCHMARKS-JOURNAL.md, "A receiver that keeps
	// its P".
	//
	// The cost is the P: while Wait sleeps no other goroutine runs on it
	// until the runtime preempts the waiting goroutine, with a signal, once
	// it has held the P for 10-20 ms (at once when the garbage collector
	// stops the world); Wait then lets the P go before it sleeps again. A
	// program with GOMAXPROCS=1, or with as many waiting devices as Ps,
	// runs its other goroutines, timers and signal handlers in those
	// slices only: measured with GOMAXPROCS=1, a timer or a signal.Notify
	// waited about 20 ms, and a garbage collection took 41-82 ms, against
	// 0.4 ms without KeepP. Wait never returns ErrTimeout early, but may
	// return one late where other goroutines compete for the P (25 ms took
	// 61 ms beside a goroutine that never blocks, against 41 ms without
	// KeepP). An idle device's Wait wakes up to about 100 times a second.
	// More waiting devices than Ps take turns a slice at a time: a
	// datagram then waits for its device's turn (skb sink on 16 ports of
	// two CPUs, each waiting on its own thread: p50 64 ms at 100 kpps, 0.9
	// ms with KeepP off; see traffic.SinkThreads).
	//
	// KeepP needs the runtime's preemption signal (SIGURG): with
	// GODEBUG=asyncpreemptoff=1 in the environment, or SIGURG ignored
	// (signal.Ignore), at Open it is left off (the KeepP method reports
	// it). Turned off later, or by a //go:debug line, each sleep still ends
	// within 10 ms, so a stop of the world waits at most that long. No
	// effect with BusyPoll, which keeps the P anyway.
	KeepP bool

	// ReusePort sets SO_REUSEPORT before bind, so that several devices
	// (one per goroutine) share one port and the kernel spreads flows across
	// them.
	ReusePort bool

	// BindToDevice, when not empty, binds the socket to the named interface
	// (SO_BINDTODEVICE).
	BindToDevice string

	// RecvSize is the largest datagram a receive buffer holds, in bytes;
	// longer ones are dropped and counted in rx_truncated (MSG_TRUNC). 0
	// means what the receive buffer's size class holds behind the headroom:
	// 1920 bytes with the default 2 KiB class and headroom, 69504 with GRO
	// (the 68 KiB class), enough for a 64 KiB train. With GRO the receive
	// buffers hold whole trains whatever RecvSize, which bounds each
	// datagram: a train whose segments are longer is dropped, its
	// datagrams counted in rx_truncated.
	RecvSize int

	// NoSrc makes receives ask the kernel for no source address (a NULL
	// msg_name, as recv(2) passes): Src then returns the zero AddrPort. It
	// is for receivers that never answer, such as a sink (an echo server,
	// traffic.Echo, answers with XmitTo(b, d.Src(), false), which then
	// fails with ErrNoDestination); it saves the kernel's copy of the
	// address and its length for every datagram. A connected device asks
	// for no address either way, and gives Remote as Src unless NoSrc.
	NoSrc bool

	// PktInfo makes receives ask the kernel for the address of this host
	// that each datagram came to (IP_PKTINFO and, on an IPv6 socket,
	// IPV6_RECVPKTINFO; ip(7), ipv6(7)), which DstAddr gives during the
	// handler; XmitFrom then answers from that address. A server bound to
	// the unspecified address (0.0.0.0 or ::) needs it to answer a request
	// sent to 127.0.0.2, say, from 127.0.0.2 rather than from the address
	// its route picks, which a connected client would drop. It costs every
	// receive a control message, and makes a busy-polling probe a
	// recvmsg(2) instead of a recvfrom(2).
	PktInfo bool

	// TxTimeout bounds how long each send call of a doorbell waits for
	// room in the socket's send buffer (SO_SNDTIMEO; a doorbell that sent
	// part of its batch before the wait retries the rest once more): after
	// it the unsent rest of the batch is dropped, counted in
	// tx_dropped_ring_full and tx_ring_full, and Xmit returns an error
	// wrapping unix.EAGAIN. 0 means DefaultTxTimeout; a negative value means
	// no wait at all (MSG_DONTWAIT).
	TxTimeout time.Duration
}

// DefaultTxTimeout is the TxTimeout used when Config.TxTimeout is 0.
const DefaultTxTimeout = time.Second

// MaxSockBuf is the largest Config.SndBuf or RcvBuf, in bytes: the largest
// value of the C int that SO_SNDBUF and SO_RCVBUF take (socket(7)).
const MaxSockBuf = math.MaxInt32

// Limits of one UDP message, from the kernel.
const (
	// MaxDatagram4 and MaxDatagram6 are the largest UDP payloads, in bytes,
	// that one datagram carries over IPv4 (65535 less the IPv4 and UDP
	// headers) and over IPv6 without jumbograms (65535 less the UDP header).
	// Xmit drops a longer one with netdev.ErrTooBig.
	MaxDatagram4 = 65535 - 20 - 8
	MaxDatagram6 = 65535 - 8

	// MaxGSOSegments is the most datagrams the driver puts in one UDP_SEGMENT
	// message: UDP_MAX_SEGMENTS of the kernel that introduced the option
	// (include/linux/udp.h, 64 in Linux 4.18; later kernels allow 128).
	MaxGSOSegments = 64
)
