// Package bench holds skb's experiments: each of the five seeds, or a claim
// of the product, turned into paired variants measured in one run, with the
// ratio of each variant to its reference. It is the engine of `skb bench`.
//
// # How a claim is measured
//
// The machines skb runs on are noisy (two shared virtual CPUs), so no
// figure stands alone: every experiment runs its variants interleaved
// (A B A B ..., so that drift hits all of them), Options.Runs times each,
// and reports for every variant and metric the median of its runs, the
// minimum, the maximum and the standard deviation, and its ratio to its
// reference variant, measured in the same run: the median of the ratios of
// its runs to the reference's run of the same round, so that a machine
// whose speed shifts between rounds (a shared host's neighbours) is
// compared with itself.
//
// The sender runs on an OS thread pinned to Options.SenderCPU and the
// receiver on one pinned to Options.ReceiverCPU (sched_setaffinity(2)), as
// the C references were measured; C programs are pinned with taskset(1).
// Every send loop is bounded in time (Options.Duration) and sends only to
// loopback or, with a lab, to 198.18.0.0/15 addresses inside namespaces
// the run makes and removes.
//
// # Experiments
//
//	burst         seed 002  UDP loopback pktgen -> sink: burst 1, 64, GSO, GSO + GRO,
//	                        burst 1 into a spinning sink
//	doorbell      seed 002  memring with a 300 ns doorbell: burst 1 vs 64
//	copybreak     seed 001  UDP loopback receive, copybreak on vs off, 64 B, 64 B GSO + GRO
//	                        and 1500 B (a control, over the threshold)
//	copybreak-mem seed 001  memring, a receiver holding its last 1024 packets, 64 B, 1500 B
//	                        (a control) and 64 B into 9000 B ring buffers
//	clone         seed 000  UDP loopback ping-pong, clone per send vs ownership pass
//	clone-mem     seed 000  the same over memring (spinning)
//	alloc         seed 003  pool vs make([]byte) per packet
//	headroom      seed 004  a 50-byte outer header pushed per packet, headroom 128 vs 0
//	headroom-mem  seed 004  the same over memring
//	udpconn                 skb's UDP path vs a plain net.UDPConn loop
//	c-udp, c-pingpong       skb beside the C references (Options.RefDir)
//	afpacket, afxdp-tx, afxdp, c-afpacket, c-afxdp-tx, c-afxdp
//	                        in a two-namespace lab (Options.Lab, root)
//
// Experiments lists them with what each shows. Run runs a selection and
// returns a Report; WriteTable, WriteJSON and WritePlots print it.
//
// # What it is not
//
// It is not a load tester and it does not tune the machine: it measures
// what the machine gives at the moment, and says so with its spread. A
// single figure from it is weaker than a ratio from it.
package bench
