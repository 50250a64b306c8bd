package bench

import (
	"context"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/traffic"
)

// The metrics the experiments report.
var (
	mRxPPS   = Metric{Name: "rx pps", Unit: "pps", Doc: "datagrams or frames the receiver took in per second, from the first to the last"}
	mTxPPS   = Metric{Name: "tx pps", Unit: "pps", Doc: "packets the sender's device sent per second"}
	mAllocs  = Metric{Name: "allocs/pkt", Unit: "allocs/pkt", Lower: true, NoRatio: true, Doc: "heap allocations per packet (in a socket run, of the whole process over the middle half of the run)"}
	mRxCPU   = Metric{Name: "rx cpu", Unit: "ns/pkt", Lower: true, Doc: "CPU time of the receiving thread per packet received (getrusage RUSAGE_THREAD for a loop in the bench's process, which leaves out the Go runtime's other threads: the GC's background workers, the netpoller's; the whole process for a C program or an skb process)"}
	mTxCPU   = Metric{Name: "tx cpu", Unit: "ns/pkt", Lower: true, Doc: "CPU time of the sending thread per packet sent (on loopback it includes the kernel's receive work, done on the sender's CPU; the thread alone or the whole process, as for rx cpu)"}
	mHeld    = Metric{Name: "held B/pkt", Unit: "B/pkt", Lower: true, Doc: "pool memory a received packet holds while the receiver keeps it (its data block)"}
	mPPS     = Metric{Name: "pps", Unit: "pps", Doc: "packets moved per second"}
	mNs      = Metric{Name: "ns/pkt", Unit: "ns/pkt", Lower: true, Doc: "nanoseconds per packet"}
	mUsec    = Metric{Name: "usec/iter", Unit: "us", Lower: true, Doc: "time of the measured round trips over their number, as ibv_rc_pingpong reports"}
	mMbps    = Metric{Name: "Mbit/s", Unit: "Mbit/s", Doc: "payload bytes moved both ways per second, as ibv_rc_pingpong reports"}
	mP50     = Metric{Name: "p50", Unit: "us", Lower: true, Doc: "median round trip"}
	mP99     = Metric{Name: "p99", Unit: "us", Lower: true, Doc: "99th percentile round trip"}
	mMean    = Metric{Name: "mean", Unit: "us", Lower: true, Doc: "mean round trip"}
	mGC      = Metric{Name: "GC/Mpkt", Unit: "GC/Mpkt", Lower: true, Doc: "garbage collections per million packets"}
	mRealloc = Metric{Name: "reallocs/pkt", Unit: "reallocs/pkt", Lower: true, NoRatio: true, Doc: "head reallocations (CowHead) per packet"}
)

// noAllocs is the target of zero heap allocations per packet in steady
// state. A run's count includes the odd allocation of the runtime and of
// the measurement itself (its timers), hence a bound rather than 0.
var noAllocs = Target{Max: 0.01, Abs: true}

// catalog lists every experiment.
func catalog() []Experiment {
	return []Experiment{
		{
			Name: "burst", Seed: "002", Default: true,
			Title:   "one doorbell per batch: UDP loopback, pktgen -> sink, 64 B",
			Shows:   "burst 1 rings the doorbell (a sendmmsg) per datagram, burst 64 once per 64; GSO 64 sends 64 datagrams in one UDP_SEGMENT message, which the kernel builds in one pass; with GRO the receiver takes them in as one train. On a socket the system call is a small part of the kernel's ~3 us per datagram, so batching the calls gains little and batching inside the kernel (GSO, GRO) gains much. The last variant shows the receive side's doorbell: a sink that sleeps when it has drained its socket must be woken by the sender's CPU, once per datagram at burst 1; a spinning sink is never woken.",
			Metrics: []Metric{mRxPPS, mTxPPS, mTxCPU, mAllocs},
			variants: func(e *env) []variant {
				t := map[string]Target{mAllocs.Name: noAllocs}
				return []variant{
					withTargets(udpVariant("burst 1", "", udpFlow{size: 64, burst: 1}), t),
					withTargets(udpVariant("burst 64", "burst 1", udpFlow{size: 64, burst: 64}), t),
					withTargets(udpVariant("GSO 64", "burst 1", udpFlow{size: 64, burst: 64, gso: true}), t),
					withTargets(udpVariant("GSO 64 + GRO", "burst 1", udpFlow{size: 64, burst: 64, gso: true, gro: true}), t),
					withTargets(udpVariant("burst 1, spinning sink", "burst 1", udpFlow{size: 64, burst: 1, spin: true}), t),
				}
			},
		},
		{
			Name: "doorbell", Seed: "002", Default: true,
			Title:   "one doorbell per batch, hermetic: memring with a 300 ns doorbell, 64 B",
			Shows:   "memring's DoorbellCost stands for the MMIO write or kick system call; burst 1 pays it per packet, burst 64 once per 64 packets (xmit_more). No kernel in the way: the gain is the doorbell's cost alone.",
			Metrics: []Metric{mPPS, mNs},
			variants: func(e *env) []variant {
				cfg := memring.Config{DoorbellCost: DoorbellCost}
				return []variant{
					memVariant("burst 1", "", memLoop{cfg: cfg, size: 64, burst: 1, headroom: -1}),
					memVariant("burst 64", "burst 1", memLoop{cfg: cfg, size: 64, burst: 64, headroom: -1}),
				}
			},
		},
		{
			Name: "copybreak", Seed: "001", Default: true,
			Title:   "receive copybreak (256 B) on vs off: UDP loopback receiver (1500 B, over the threshold, is a control)",
			Shows:   "with copybreak a datagram under 256 bytes is copied into a 512-byte block and the 2 KiB receive buffer is reposted at once; off, the 2 KiB buffer goes up and a fresh one is posted. With GRO, off hands each datagram of a train over as a clone of the 64 KiB train buffer, which it keeps alive; on copies it into a 512-byte block and reposts the train buffer. On loopback the kernel's copy dominates the receive cost, so the rate barely moves; what changes is the memory each received packet holds. At 1500 B, over the threshold, copybreak on does nothing: the two rows should match.",
			Metrics: []Metric{mRxPPS, mRxCPU, mHeld},
			Plot:    2, // held B/pkt: the rate barely moves
			variants: func(e *env) []variant {
				f := func(size, cb int) udpFlow {
					return udpFlow{size: size, burst: 64, copybreak: cb, held: true}
				}
				gro := func(f udpFlow) udpFlow {
					f.gso, f.gro = true, true
					return f
				}
				return []variant{
					udpVariant("64 B, copybreak off", "", f(64, netdev.CopybreakOff)),
					udpVariant("64 B, copybreak on", "64 B, copybreak off", f(64, 0)),
					udpVariant("64 B GSO+GRO, copybreak off", "", gro(f(64, netdev.CopybreakOff))),
					udpVariant("64 B GSO+GRO, copybreak on", "64 B GSO+GRO, copybreak off", gro(f(64, 0))),
					udpVariant("1500 B, copybreak off", "", f(1500, netdev.CopybreakOff)),
					udpVariant("1500 B, copybreak on", "1500 B, copybreak off", f(1500, 0)),
				}
			},
		},
		{
			Name: "copybreak-mem", Seed: "001", Default: true,
			Title:   "receive copybreak on vs off, hermetic: memring, receiver holding its last 1024 packets (1500 B, over the threshold, is a control)",
			Shows:   "a receiver that queues packets (reassembly, a socket queue) keeps their buffers: with copybreak a 64-byte packet holds a 512-byte block instead of its 2 KiB ring buffer (or 16 KiB with 9000-byte ring buffers, as IPoIB CM's large receive buffers in the seed), at the price of a copy; with a pool, reposting a fresh ring buffer is cheap, so the copy is what the rate shows. At 1500 B, over the threshold, nothing changes.",
			Metrics: []Metric{mPPS, mNs, mHeld},
			Plot:    2, // held B/pkt
			variants: func(e *env) []variant {
				f := func(size, cb, ring int) memLoop {
					return memLoop{
						cfg:  memring.Config{Config: netdev.Config{Copybreak: cb}, RingSize: 1024, RxBufSize: ring},
						size: size, burst: 64, hold: 1024, headroom: -1,
						classes: []pool.Class{{Size: pool.SmallSize}, {Size: pool.FrameSize}, {Size: 16 << 10}},
					}
				}
				jumbo := 9000
				return []variant{
					memVariant("64 B, copybreak off", "", f(64, netdev.CopybreakOff, 0)),
					memVariant("64 B, copybreak on", "64 B, copybreak off", f(64, 0, 0)),
					memVariant("1500 B, copybreak off", "", f(1500, netdev.CopybreakOff, 0)),
					memVariant("1500 B, copybreak on", "1500 B, copybreak off", f(1500, 0, 0)),
					memVariant("64 B, 9000 B ring, copybreak off", "", f(64, netdev.CopybreakOff, jumbo)),
					memVariant("64 B, 9000 B ring, copybreak on", "64 B, 9000 B ring, copybreak off", f(64, 0, jumbo)),
				}
			},
		},
		{
			Name: "clone", Seed: "000", Default: true,
			Title:   "transmit the caller's buffer vs a clone per send: UDP loopback ping-pong, 4096 B, busy-poll",
			Shows:   "as ibv_rc_pingpong in the seed: usec/iter and Mbit/s of a one-in-flight ping-pong. The clone variant does what rxe_send did before the patch on both sides: skb_clone, send the clone, free the original. On a socket the kernel's work hides the clone's cost (tens of ns against microseconds).",
			Metrics: []Metric{mUsec, mMbps, mP50},
			variants: func(e *env) []variant {
				iters := pingIters(e.dur, 8*time.Microsecond)
				return cloneVariants(func(ctx context.Context, e *env, clone bool) (sample, error) {
					return pingUDP(ctx, e, 4096, iters, true, clone)
				})
			},
		},
		{
			Name: "clone-mem", Seed: "000", Default: true,
			Title:   "transmit the caller's buffer vs a clone per send, hermetic: memring ping-pong, 4096 B, spinning",
			Shows:   "memring's CloneOnXmit makes every Xmit clone and free the original, on both ends; with no kernel in the round trip the clone's cost shows.",
			Metrics: []Metric{mUsec, mMbps, mP50},
			variants: func(e *env) []variant {
				return cloneVariants(func(ctx context.Context, e *env, clone bool) (sample, error) {
					return pingMem(ctx, e, 4096, clone)
				})
			},
		},
		{
			Name: "alloc", Seed: "003", Default: true,
			Title:   "pool vs make([]byte) per packet: allocation loop (256 in flight), and UDP loopback burst 64",
			Shows:   "the pool hands out a block and a header from a per-goroutine cache with one clear of the metadata (seed 003) and no heap allocation; make([]byte) allocates every packet's data on the Go heap, which the collector must then reclaim. ns/pkt, allocs/pkt and GC/Mpkt come from the loop, tx pps and tx cpu from a loopback sender whose buffers come from one or the other.",
			Metrics: []Metric{mNs, mAllocs, mGC, mTxPPS, mTxCPU},
			variants: func(e *env) []variant {
				run := func(heap bool) func(context.Context, *env) (sample, error) {
					return func(ctx context.Context, e *env) (sample, error) {
						s, err := runAllocLoop(ctx, e, heap, 64)
						if err != nil {
							return nil, err
						}
						f := udpFlow{size: 64, burst: 64}
						if heap {
							f.wrap = heapWrap
						}
						u, err := runUDP(ctx, e, f)
						if err != nil {
							return nil, err
						}
						s[mTxPPS.Name], s[mTxCPU.Name] = u[mTxPPS.Name], u[mTxCPU.Name]
						return s, nil
					}
				}
				return []variant{
					{name: "pool", run: run(false), targets: map[string]Target{mAllocs.Name: noAllocs}},
					{name: "make([]byte)", ref: "pool", run: run(true)},
				}
			},
		},
		{
			Name: "headroom", Seed: "004", Default: true,
			Title:   "headroom 128 vs 0 under a 50-byte outer header: UDP loopback, burst 64",
			Shows:   "a tunnel pushes an outer header (IPv4 + UDP + VXLAN + inner Ethernet, 50 bytes) on every packet before transmit; with 128 bytes of headroom the push is in place, with none every packet needs CowHead to reallocate and copy its head. On a socket the kernel's cost hides most of the copy.",
			Metrics: []Metric{mRxPPS, mTxPPS, mTxCPU, mRealloc},
			variants: func(e *env) []variant {
				return []variant{
					headroomVariant("headroom 128", "", skbHeadroom),
					headroomVariant("headroom 0", "headroom 128", 0),
				}
			},
		},
		{
			Name: "headroom-mem", Seed: "004", Default: true,
			Title:   "headroom 128 vs 0 under a 50-byte outer header, hermetic: memring, burst 64",
			Shows:   "the same encapsulation over memring, where the reallocation and copy of every head is the difference.",
			Metrics: []Metric{mPPS, mNs, mRealloc},
			variants: func(e *env) []variant {
				return []variant{
					memVariant("headroom 128", "", memLoop{size: 64, burst: 64, headroom: skbHeadroom}),
					memVariant("headroom 0", "headroom 128", memLoop{size: 64, burst: 64, headroom: 0}),
				}
			},
		},
		{
			Name: "udpconn", Default: true,
			Title:   "skb's UDP path vs a plain net.UDPConn loop (WriteToUDP -> ReadFromUDP), 64 B",
			Shows:   "the Go program skb replaces: one WriteToUDP and one ReadFromUDP per datagram through the runtime's poller, against skb's sender and receiver with one datagram per doorbell (the sink waiting to be woken, as ReadFromUDP waits in the poller, and sleeping when drained, as skb sink does by default), and with GSO and GRO. skb's sender writes no send time in its stamps, as the plain loop writes none (it reads the clock once per 64 datagrams, as the loop does).",
			Metrics: []Metric{mRxPPS, mTxPPS, mTxCPU, mRxCPU},
			variants: func(e *env) []variant {
				return []variant{
					{name: "net.UDPConn", run: func(ctx context.Context, e *env) (sample, error) { return udpConnRun(ctx, e, 64) }},
					udpVariant("skb burst 1", "net.UDPConn", udpFlow{noTimestamp: true, size: 64, burst: 1}),
					udpVariant("skb burst 1, sleeping sink", "net.UDPConn", udpFlow{noTimestamp: true, size: 64, burst: 1, sleep: traffic.DefaultSinkSleep}),
					withTargets(udpVariant("skb GSO 64 + GRO", "net.UDPConn", udpFlow{noTimestamp: true, size: 64, burst: 64, gso: true, gro: true}),
						map[string]Target{mRxPPS.Name: {Min: 50}}),
				}
			},
		},
		{
			Name: "c-udp", Ref: true, refProgs: []string{"udp_send", "udp_recv"},
			Title:   "skb beside the C reference on UDP loopback (udp_send -> udp_recv), 64 B",
			Shows:   "each skb variant runs interleaved with the C program doing the same (sendto/recvfrom, sendmmsg/recvmmsg 64, UDP_SEGMENT, UDP_GRO); the ratio is skb over C. skb's sender and sink run as two threads of the bench's process; with the skb tool at hand (skb bench), also as skb pktgen and skb sink processes, each pinned to its CPU in a session of its own, as the C programs run, the sink waiting to be woken (--sleep 0) as C's receiver does. Either way skb's pktgen writes no send time in its stamps (--no-timestamp; the sink then times nothing), as C's udp_send writes none and C's udp_recv times nothing; the time-stamped rows show what reading the clock for every datagram and timing it at the sink cost. skb pktgen connects its socket to its one destination, so its burst 1 and burst 64 rows are against C's udp_send connected too (-C), and its GSO rows against C's plain ones (a GSO message is routed once per 64 datagrams either way). skb's sinks ask the kernel for no source address, which they do not use; C's udp_recv asks for it. tx cpu and rx cpu are the CPU time per packet of the sending and the receiving thread (of a C program or an skb process, from its getrusage); a spinning C receiver has no rx cpu, its process spinning through the waits before and after the traffic as well.",
			Metrics: []Metric{mRxPPS, mTxPPS, mTxCPU, mRxCPU},
			variants: func(e *env) []variant {
				c := func(name string, send, recv []string) variant {
					return variant{name: name, run: func(ctx context.Context, e *env) (sample, error) { return cUDPRun(ctx, e, send, recv) }}
				}
				rx := func(min float64) map[string]Target { return map[string]Target{mRxPPS.Name: {Min: min}} }
				v := []variant{
					c("C sendto", []string{"-s", "64", "-b", "1"}, []string{"-b", "1"}),
					withTargets(udpVariant("skb burst 1", "C sendto", udpFlow{noTimestamp: true, size: 64, burst: 1}), rx(0.9)),
					udpVariant("skb burst 1, time-stamped", "C sendto", udpFlow{size: 64, burst: 1}),
					withTargets(udpVariant("skb burst 1, sleeping sink", "C sendto", udpFlow{noTimestamp: true, size: 64, burst: 1, sleep: traffic.DefaultSinkSleep}), rx(0.9)),
					c("C sendto, spinning receiver", []string{"-s", "64", "-b", "1"}, []string{"-b", "1", "-n"}),
					withTargets(udpVariant("skb burst 1, spinning sink", "C sendto, spinning receiver", udpFlow{noTimestamp: true, size: 64, burst: 1, spin: true}), rx(0.9)),
					c("C sendmmsg 64", []string{"-s", "64", "-b", "64"}, []string{"-b", "64", "-w"}),
					withTargets(udpVariant("skb burst 64", "C sendmmsg 64", udpFlow{noTimestamp: true, size: 64, burst: 64}), rx(0.95)),
					withTargets(udpVariant("skb burst 64, sleeping sink", "C sendmmsg 64", udpFlow{noTimestamp: true, size: 64, burst: 64, sleep: traffic.DefaultSinkSleep}), rx(0.95)),
					c("C sendmmsg 64, spinning receiver", []string{"-s", "64", "-b", "64"}, []string{"-b", "64", "-n"}),
					withTargets(udpVariant("skb burst 64, spinning sink", "C sendmmsg 64, spinning receiver", udpFlow{noTimestamp: true, size: 64, burst: 64, spin: true}), rx(0.95)),
					c("C GSO 64", []string{"-s", "64", "-b", "1", "-g", "64"}, []string{"-b", "64", "-w"}),
					withTargets(udpVariant("skb GSO 64", "C GSO 64", udpFlow{noTimestamp: true, size: 64, burst: 64, gso: true}), rx(0.9)),
					c("C GSO 64 + GRO", []string{"-s", "64", "-b", "1", "-g", "64"}, []string{"-b", "64", "-w", "-G"}),
					withTargets(udpVariant("skb GSO 64 + GRO", "C GSO 64 + GRO", udpFlow{noTimestamp: true, size: 64, burst: 64, gso: true, gro: true}), rx(0.8)),
				}
				if e.opts.Tool != "" {
					// The tool's pktgen and sink as C's programs run; the
					// sink waits to be woken (--sleep 0) as C's receiver
					// does, and pktgen writes no send time in its stamps
					// (--no-timestamp), as C's udp_send writes none: the
					// time-stamped row shows what a clock read per
					// datagram costs. pktgen connects its socket to its
					// one destination, so its datagram rows are measured
					// against C's udp_send connected too (-C); a GSO
					// message is routed once per 64 datagrams either way.
					p := func(name, ref string, min float64, sink []string, gen ...string) variant {
						return withTargets(variant{name: name, ref: ref, run: udpProcRun(append([]string{"--sleep", "0"}, sink...), append([]string{"--no-timestamp"}, gen...))}, rx(min))
					}
					stamped := variant{name: "skb processes burst 1, time-stamped", ref: "C sendto, connected", run: udpProcRun([]string{"--sleep", "0"}, []string{"--burst", "1"})}
					v = append(v,
						c("C sendto, connected", []string{"-s", "64", "-b", "1", "-C"}, []string{"-b", "1"}),
						p("skb processes burst 1", "C sendto, connected", 0.9, nil, "--burst", "1"),
						stamped,
						c("C sendmmsg 64, connected", []string{"-s", "64", "-b", "64", "-C"}, []string{"-b", "64", "-w"}),
						p("skb processes burst 64", "C sendmmsg 64, connected", 0.95, nil, "--burst", "64"),
						p("skb processes GSO 64", "C GSO 64", 0.9, nil, "--burst", "64", "--gso"),
						p("skb processes GSO 64 + GRO", "C GSO 64 + GRO", 0.8, []string{"--gro"}, "--burst", "64", "--gso"),
					)
				}
				return v
			},
		},
		{
			Name: "c-pingpong", Ref: true, refProgs: []string{"pingpong"},
			Title:   "skb beside the C reference ping-pong on UDP loopback, 64 B",
			Shows:   "one request in flight; blocking receive on both sides, then busy-polling on both sides (-y). The ratio is skb over C: lower is better. The Go raw variants make C's system calls from Go without skb (x/sys/unix, RawSyscall6): the floor a Go program starts from. skb's ends run as two threads of the bench's process; with the skb tool at hand (skb bench), also as skb pingpong --server and skb pingpong processes, each pinned to its CPU in a session of its own, as the C programs run. glibc registers rseq(2) for every thread it starts, which costs each wake-up from a blocking receive; Go does not use it, and the skb tool, when linked against glibc, starts again without it. The row C blocking, glibc rseq off runs the C programs without it too (GLIBC_TUNABLES=glibc.pthread.rseq=0): what the registration costs C.",
			Metrics: []Metric{mP50, mP99, mMean},
			variants: func(e *env) []variant {
				p50 := map[string]Target{mP50.Name: {Max: 1.05}}
				blockIters := pingIters(e.dur, 60*time.Microsecond)
				busyIters := pingIters(e.dur, 6*time.Microsecond)
				c := func(iters int, busy bool, extra ...string) func(context.Context, *env) (sample, error) {
					return func(ctx context.Context, e *env) (sample, error) { return cPingRun(ctx, e, iters, busy, extra) }
				}
				s := func(iters int, busy bool) func(context.Context, *env) (sample, error) {
					return func(ctx context.Context, e *env) (sample, error) { return pingUDP(ctx, e, 64, iters, busy, false) }
				}
				v := []variant{
					{name: "C blocking", run: c(blockIters, false)},
					{name: "C blocking, glibc rseq off", ref: "C blocking", run: c(blockIters, false, rseqOffEnv())},
					{name: "skb blocking", ref: "C blocking", run: s(blockIters, false), targets: p50},
					{name: "Go raw syscalls blocking", ref: "C blocking", run: func(ctx context.Context, e *env) (sample, error) {
						return rawPingRun(ctx, e, blockIters, false)
					}},
					{name: "C busy-poll", run: c(busyIters, true)},
					{name: "skb busy-poll", ref: "C busy-poll", run: s(busyIters, true), targets: p50},
					{name: "Go raw syscalls busy-poll", ref: "C busy-poll", run: func(ctx context.Context, e *env) (sample, error) {
						return rawPingRun(ctx, e, busyIters, true)
					}},
				}
				if e.opts.Tool != "" {
					v = append(v, variant{name: "skb processes busy-poll", ref: "C busy-poll", run: pingProcRun(busyIters, true)})
				}
				return v
			},
		},
		{
			Name: "afpacket", Lab: true,
			Title:   "AF_PACKET over veth: pktgen (sendmmsg) -> sink (TPACKET_V3 ring), 64 B payloads",
			Shows:   "a link-layer sender and receiver in two namespaces: one doorbell per frame vs per 64 frames. On veth the receive side's softirq runs on the sender's CPU.",
			Metrics: []Metric{mRxPPS, mTxPPS, mTxCPU, mRxCPU, mAllocs},
			variants: func(e *env) []variant {
				t := map[string]Target{mAllocs.Name: noAllocs}
				return []variant{
					{name: "burst 1", run: afpacketRun(1, false), targets: t},
					{name: "burst 64", ref: "burst 1", run: afpacketRun(64, false), targets: t},
				}
			},
		},
		{
			Name: "afxdp-tx", Seed: "002", Lab: true,
			Title:   "AF_XDP transmit only over veth: a kick per frame vs per 64 frames",
			Shows:   "seed 002 with a real doorbell: every kick is a sendto system call into the kernel's copy-mode transmit; burst 64 kicks once per 64 descriptors (the kernel takes 32 per call).",
			Metrics: []Metric{mTxPPS, mTxCPU, mAllocs},
			variants: func(e *env) []variant {
				return []variant{
					{name: "burst 1", run: afxdpTxRun(1), targets: map[string]Target{mAllocs.Name: noAllocs}},
					{name: "burst 64", ref: "burst 1", run: afxdpTxRun(64),
						targets: map[string]Target{mTxPPS.Name: {Min: 1.25}, mAllocs.Name: noAllocs}},
				}
			},
		},
		{
			Name: "afxdp", Lab: true,
			Title:   "AF_XDP -> AF_XDP over veth (native XDP redirect, copy mode), burst 64, receiver sleeping 50 us when empty",
			Shows:   "the zero-copy-in-user-space path both ways: the receiver takes each frame in its UMEM buffer (copybreak off: the sink frees every frame at once, so nothing holds the fill ring's buffers); with threaded NAPI the receive work moves from the sender's CPU to a kernel thread the scheduler may put on the other CPU.",
			Metrics: []Metric{mRxPPS, mTxPPS, mTxCPU, mRxCPU, mAllocs},
			variants: func(e *env) []variant {
				t := map[string]Target{mAllocs.Name: noAllocs}
				return []variant{
					{name: "NAPI in softirq", run: afxdpRun(false), targets: t},
					{name: "threaded NAPI", ref: "NAPI in softirq", run: afxdpRun(true), targets: t},
				}
			},
		},
		{
			Name: "c-afpacket", Lab: true, Ref: true, refProgs: []string{"afp_send", "afp_recv"},
			Title:   "AF_PACKET transmit beside the C reference: sendmmsg 64 into a TPACKET_V3 receiver",
			Shows:   "afp_send -m mmsg -b 64 and skb's pktgen, each into the C receiver afp_recv (so only the sender differs), and skb into skb's own sink; the ratio is over the C pair.",
			Metrics: []Metric{mRxPPS, mTxPPS, mTxCPU, mRxCPU},
			variants: func(e *env) []variant {
				return []variant{
					{name: "C afp_send -> afp_recv", run: cAFPacketRun()},
					{name: "skb -> afp_recv", ref: "C afp_send -> afp_recv", run: afpacketRun(64, true),
						targets: map[string]Target{mRxPPS.Name: {Min: 0.9}}},
					{name: "skb -> skb sink", ref: "C afp_send -> afp_recv", run: afpacketRun(64, false)},
				}
			},
		},
		{
			Name: "c-afxdp-tx", Lab: true, Ref: true, refProgs: []string{"xsk_tx"},
			Title:   "AF_XDP transmit only beside the C reference (xsk_tx -k 1 and -k 64)",
			Shows:   "the same doorbell policy in C and in skb; the ratio is skb over C with the same kick.",
			Metrics: []Metric{mTxPPS, mTxCPU},
			variants: func(e *env) []variant {
				return []variant{
					{name: "C xsk_tx -k 1", run: cXskTxRun(1)},
					{name: "skb burst 1", ref: "C xsk_tx -k 1", run: afxdpTxRun(1)},
					{name: "C xsk_tx -k 64", run: cXskTxRun(64)},
					{name: "skb burst 64", ref: "C xsk_tx -k 64", run: afxdpTxRun(64),
						targets: map[string]Target{mTxPPS.Name: {Min: 0.9}}},
				}
			},
		},
		{
			Name: "c-afxdp", Lab: true, Ref: true, refProgs: []string{"xsk_tx", "xsk_rx"},
			Title:   "AF_XDP -> AF_XDP beside the C reference (xsk_tx -k 64 -> xsk_rx -w usleep:50), NAPI in softirq and threaded",
			Shows:   "the same waiting policy on both: the receiver sleeps 50 us when its ring is empty; then both again with B's NAPI threaded. Both receivers read each frame where the kernel wrote it in the UMEM (skb's with copybreak off). skb's sender and receiver run in the bench's process; with the skb tool at hand (skb bench), also as skb pktgen and skb sink processes pinned to their CPUs, each in a session of its own, as the C programs run: that is the like-for-like row of the threaded pair, where the receiver shares its CPU with the NAPI thread and the scheduler weighs it as a group of its own. In the bench's process the receiver is weighed as a share of one group with the busy sender. The ratio is skb over C.",
			Metrics: []Metric{mRxPPS, mTxPPS, mTxCPU, mRxCPU},
			variants: func(e *env) []variant {
				v := []variant{
					{name: "C xsk_tx -> xsk_rx", run: cXskRun(false)},
					{name: "skb -> skb", ref: "C xsk_tx -> xsk_rx", run: afxdpRun(false),
						targets: map[string]Target{mRxPPS.Name: {Min: 0.9}}},
					{name: "C, threaded NAPI", run: cXskRun(true)},
					{name: "skb, threaded NAPI", ref: "C, threaded NAPI", run: afxdpRun(true)},
				}
				if e.opts.Tool != "" {
					v = append(v, variant{name: "skb processes, threaded NAPI", ref: "C, threaded NAPI", run: afxdpProcRun(true),
						targets: map[string]Target{mRxPPS.Name: {Min: 0.9}}})
				}
				return v
			},
		},
	}
}

// withTargets returns v with targets set.
func withTargets(v variant, t map[string]Target) variant {
	v.targets = t
	return v
}

// cloneVariants returns the two variants of the clone experiments: run
// without a clone per send ("ownership pass", the reference) and with one
// ("clone per send").
func cloneVariants(run func(ctx context.Context, e *env, clone bool) (sample, error)) []variant {
	v := func(clone bool) func(context.Context, *env) (sample, error) {
		return func(ctx context.Context, e *env) (sample, error) { return run(ctx, e, clone) }
	}
	return []variant{
		{name: "ownership pass", run: v(false)},
		{name: "clone per send", ref: "ownership pass", run: v(true)},
	}
}
