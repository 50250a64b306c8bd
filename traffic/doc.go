// Package traffic holds the engines of skb's traffic tools: a packet
// generator (Pktgen), a counting receiver (Sink), and a round-trip latency
// test (PingPong, with Echo as its server), each driving any netdev.Device.
// They are the engines behind `skb pktgen`, `skb sink` and `skb pingpong`,
// and the building blocks of benchmarks: plain types and functions taking a
// config struct and returning a result struct. They print nothing; progress
// is reported through a callback once per interval.
//
// # Packets
//
// A device carries either datagrams or frames, and the engines follow:
//
//   - Datagram devices (driver/udp) carry UDP payloads. A generator sends
//     each flow to its own destination port with XmitTo when the device
//     has it (AddrXmitter) and a destination is configured, and with Xmit to
//     the device's own destination otherwise (a connected socket, a memring
//     pair).
//   - Link-layer devices (driver/afpacket, driver/afxdp) carry Ethernet
//     frames. The generator builds Ethernet/IPv4 or IPv6/UDP frames from a
//     header.UDPFrame template, and the sink and the echo server parse
//     frames with header.ParseFrameInto and look at UDP datagrams only.
//
// In both, the first StampLen bytes of the UDP payload are a Stamp: magic,
// run, flow, sequence number, send time and a check of them (a corrupt
// stamp is not counted), from which the sink counts loss,
// reordering, duplicates and one-way latency per flow, and the ping-pong
// client matches each reply to its request. Sizes are UDP payload bytes in
// both modes, as the C reference tools count them, and so are the byte counts
// and megabit rates the results report (Bytes, Mbps); on a link-layer device
// the results also count whole frames (FrameBytes, FrameMbps).
//
// # Costs
//
// Steady state allocates nothing on the Go heap per packet: buffers come
// from the device's pool cache (or its Alloc, for an AF_XDP UMEM), the
// clock is read once per burst or per Poll, and per-flow state lives in
// slices sized at start. Rate limiting is a token bucket that sleeps when
// it is ahead of schedule and never spins.
//
// # Concurrency
//
// An engine drives one device from one goroutine, as package netdev
// requires: Run, Burst and Poll use the device from the calling goroutine
// only, and the interval callback runs on that goroutine between bursts.
// Cancelling the context passed to Run stops the engine, which then
// reports what it did so far.
//
// # What it is not
//
// It is not a protocol stack: it answers no ARP, builds no TCP, and does not
// resolve addresses (the caller fills in MACs and IPs; cmd/skb reads them
// from the kernel's tables). Loss counting assumes the flow's packets come
// from one generator run; a repeat is recognised as a duplicate within the
// last 961 to 1024 sequence numbers of its flow, and counts as reordered
// when it comes later than that.
package traffic
