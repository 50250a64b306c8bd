// Package udp is a netdev.Device over one UDP socket: batched transmit with
// sendmmsg(2) and UDP segmentation offload (UDP_SEGMENT), batched receive
// with recvmmsg(2) and UDP receive coalescing (UDP_GRO), driven through
// golang.org/x/sys/unix on the socket's descriptor, with no Go netpoller and
// no allocation per datagram.
//
// A packet is a UDP datagram: a buffer's data (linear data, frags and frag
// list) is the UDP payload, without IP or UDP header.
//
// # Transmit
//
// Xmit queues a buffer in a batch preallocated at Open; the doorbell is one
// system call for the batch (sendto for a datagram alone, sendmmsg for
// more), rung when more is false, when the batch is full and
// on every error path (seed 002), and it retries the unsent tail after a
// short count. Buffers are sent from where they are, with one iovec per
// piece, and freed into the device's Cache after the call, without a clone
// (seed 000). A datagram the kernel refuses is dropped and counted by
// reason; the rest of the batch is still sent. When the socket's send
// buffer stays full for TxTimeout the unsent rest is dropped (EAGAIN). The
// call is first made with MSG_DONTWAIT outside the Go scheduler's view
// (a raw system call): on loopback the receive path runs inside the sender's
// call, and a send the scheduler watches for tens of microseconds has its P
// handed away; only a full send buffer makes the driver retry with a call
// that sleeps.
//
// With Config.GSO, a run of equal-size datagrams to one destination (the
// last may be shorter) goes as one message with a UDP_SEGMENT control
// message and an iovec per datagram, within the kernel's limits (64
// segments, 64 KiB per message): the kernel then builds all the datagrams in
// one pass, which is what makes a UDP socket fast (one send, many
// datagrams). Datagrams shorter than 256 bytes are copied into one staging
// buffer instead, one iovec per run, since the kernel's cost per iovec
// exceeds such a copy. A buffer that is already a GSO super-packet (GSOSize set,
// GSOType skb.GSOUDPL4) is sent as such, or cut into datagrams by the driver
// when GSO is off. A GSO send failing with EIO turns GSO off for the
// socket, counted in gso_fallback_eio, and the same datagrams are sent
// again plainly; one failing with EINVAL or EMSGSIZE is sent again plainly
// and turns GSO off (gso_fallback_einval, gso_fallback_emsgsize) only when
// its first datagram then goes, so that a datagram the kernel would refuse
// anyway (an unreachable route, a foreign source, a size over the MTU)
// does not cost the socket its GSO.
//
//	Xmit(b1,true) ... Xmit(b64,false)   GSO off: sendmmsg of 64 messages
//	                                    GSO on:  sendmmsg of 1 message, UDP_SEGMENT,
//	                                             64 iovecs (1 staged under 256 bytes)
//
// # Destinations
//
// A device opened with Config.Remote is connected: every datagram goes
// there. An unconnected device sends where SetDst last pointed, or to the
// destination XmitTo gives for one datagram; a packet generator's flows
// (many ports on one address) are XmitTo calls. Both encode the address once,
// without allocating; the doorbell groups GSO runs by destination.
//
// # Receive
//
// Poll receives with recvmmsg into buffers posted from the device's Cache,
// with the Config's headroom in front of the payload (seed 004): 2 KiB
// buffers normally, 68 KiB with GRO. A datagram shorter than the copybreak
// threshold (netdev.DefaultCopybreak, 256 bytes) is copied into a small
// buffer and the posted one is reused at once (seed 001). A GRO train is
// split by its segment size into one buffer per datagram. A datagram longer
// than the receive buffer is dropped and counted in rx_truncated (MSG_TRUNC;
// nothing is read past the buffer; a GRO train the kernel cut counts once,
// as the kernel reports one message, and a train whose segments are over
// Config.RecvSize counts each), and datagrams the kernel dropped because
// the socket's receive buffer was full are counted in rx_dropped_kernel,
// read from the socket (SO_MEMINFO) when Stats is called rather than carried
// on every datagram (SO_RXQ_OVFL, whose control message cost a receiver
// that was dropping 13% of its CPU). The kernel counts what it drops as it
// queues it: with GRO on, a dropped train counts once however many
// datagrams it held (a 64-datagram GSO sender into a full GRO socket showed
// 4202 kernel drops for 268928 datagrams lost), so rx_dropped_kernel then
// counts trains; loss counted from sequence numbers (skb sink) is exact.
//
// Src returns the source address of the datagram the handler is being given:
// an echo server answers with XmitTo(b, d.Src(), false). A receiver that
// never answers (a sink) sets Config.NoSrc: its receives then ask for no
// address, which a saturated loopback sink of 64-byte datagrams measured at
// about 8% more datagrams per second (1.26 against 1.16 Mpps, medians of
// ten runs beside the C udp_recv, which got 1.23). A connected device never
// asks: its source can only be Remote, which Src gives unless NoSrc is set.
//
// A server bound to the unspecified address (0.0.0.0 or ::) answers from
// the address the kernel's route back picks unless told otherwise, and a
// client connected to another of the host's addresses (127.0.0.2, say)
// drops such an answer. With Config.PktInfo each receive also reports the
// address the datagram came to (IP_PKTINFO, IPV6_PKTINFO), which DstAddr
// gives, and XmitFrom(b, d.DstAddr(), d.Src(), false) answers from it: the
// source travels as a control message (IP_PKTINFO, IPV6_PKTINFO) of the
// doorbell's sendmmsg(2) or sendmsg(2), and a GSO run takes datagrams of
// one source only.
//
// Wait sleeps in the kernel in a recvmmsg(2) with MSG_WAITFORONE that
// receives the first datagram and what else is queued, which the next Poll
// hands over without another system call; once such a wait woke with one
// datagram, the next ones sleep in a recvfrom(2) of one, which spares the
// kernel a second try for a datagram that is not there, until a batch asked
// for every eighth wait brings more than one. With Config.BusyPoll it spins
// instead, polling the socket without sleeping, which saves the wake-up of
// a sleeping CPU (about 23 µs on a virtual machine) per round trip.
// BusyPoll (netdev.BusyPoller) spins and hands over in one call, whatever
// Config.BusyPoll says: its probes run one after another in an assembly
// loop (mmsg.RecvfromSpin), with nothing between two system calls, and
// a datagram found goes to the handler by the frames of Poll's own probe.
// It is what a busy-polling loop calls instead of Poll (traffic's
// ping-pong and echo server do). With
// Config.KeepP, for a goroutine on a thread of its own, the receive that
// sleeps keeps the goroutine's P rather than leaving it to the Go
// scheduler, whose monitor thread otherwise works on the receiver's CPU at
// every sleep. Close wakes a waiting Wait.
//
// # Counters
//
// Stats counts as netdev says: tx_packets and rx_packets in datagrams (a
// GSO message or GRO train counts as its datagrams), tx_doorbells in
// system calls that sent, rx_copybreak, rx_truncated, rx_dropped_kernel,
// tx_dropped_<reason> (too_big for EMSGSIZE and oversized packets,
// ring_full when the send buffer stayed full, nobuf for ENOBUFS, error for
// a refused destination, closed) and gso_fallback_<reason>.
//
// # Concurrency and errors
//
// A Device belongs to one goroutine, as netdev says; Stats and Close are
// safe from any. Errors are prefixed "udp: <op>: " and wrap the errno, so
// errors.Is(err, unix.EAGAIN) works; after Close they match net.ErrClosed.
//
// # What it is not
//
// It is not a replacement for net.UDPConn in ordinary programs: it has no
// deadlines per call and does not use the Go netpoller, so a Device ties up
// its goroutine's thread while it waits. It sends and receives UDP payloads
// only; whole frames are for the afpacket and afxdp drivers.
// It needs Linux: elsewhere Open returns an error wrapping
// errors.ErrUnsupported.
package udp
