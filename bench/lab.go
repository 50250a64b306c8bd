package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/skbdev/skb/driver/afpacket"
	"github.com/skbdev/skb/driver/afxdp"
	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/traffic"
)

// labPort is the UDP port the lab runs send to: the C references' default.
const labPort = 9000

// labEnv is the lab a run made: side A (198.18.0.1) sends, side B
// (198.18.0.2) receives.
type labEnv struct {
	l     *lab.Lab
	frame header.UDPFrame
}

// newLabEnv makes a lab with a generated name. It returns an error wrapping
// ErrNeedRoot when the process may not.
func newLabEnv() (*labEnv, error) {
	if err := lab.Privileged(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNeedRoot, err)
	}
	_, _ = lab.Cleanup() // labs of killed runs
	l, err := lab.New(lab.Options{})
	if err != nil {
		return nil, fmt.Errorf("bench: make the lab: %w", err)
	}
	src, _ := header.MACFrom(lab.MACA)
	dst, _ := header.MACFrom(lab.MACB)
	// UDP checksum 0 ("none" over IPv4, RFC 768), as the C references'
	// frames carry and as the kernel's pktgen sends without UDPCSUM: the
	// senders compared do the same work per frame.
	return &labEnv{l: l, frame: header.UDPFrame{
		Source: src, Destination: dst,
		SourceIP: lab.AddrA, DestinationIP: lab.AddrB,
		SourcePort: 12345, DestinationPort: labPort,
		NoChecksum: true,
	}}, nil
}

func (le *labEnv) close() error { return le.l.Close() }

// threaded turns threaded NAPI on for B's veth and pins its kernel thread
// to the receiver CPU, as the C references were measured ("threaded on
// CPU 1"): left to the scheduler it sometimes runs on the sender's CPU,
// and that run's rate halves, for C and skb alike. The caller turns it
// off.
func (le *labEnv) threaded(e *env) error {
	if err := le.l.SetThreaded(true); err != nil {
		return err
	}
	if e.receiver >= 0 {
		if _, err := le.l.PinNAPI(e.receiver); err != nil {
			le.l.SetThreaded(false)
			return err
		}
	}
	return nil
}

// errNoLab is the error of a lab variant run without a lab.
var errNoLab = fmt.Errorf("%w: no lab (run with --lab)", ErrConfig)

// openIn opens a device with open on a thread in h's namespace: the socket
// lives there from then on, whichever thread uses it.
func openIn[D any](h *lab.Host, open func() (D, error)) (D, error) {
	var d D
	err := h.Do(func() error {
		var err error
		d, err = open()
		return err
	})
	return d, err
}

// labRun returns a run of fn in e's lab; without a lab the run returns
// errNoLab.
func labRun(fn func(ctx context.Context, e *env, le *labEnv) (sample, error)) func(context.Context, *env) (sample, error) {
	return func(ctx context.Context, e *env) (sample, error) {
		if e.lab == nil {
			return nil, errNoLab
		}
		return fn(ctx, e, e.lab)
	}
}

// openAFPacket opens an AF_PACKET device with cfg on h's interface, in h's
// namespace.
func openAFPacket(h *lab.Host, cfg afpacket.Config) (*afpacket.Device, error) {
	cfg.Ifname = h.Ifname
	return openIn(h, func() (*afpacket.Device, error) { return afpacket.Open(cfg) })
}

// openAFXDP opens an AF_XDP device with cfg on queue 0 of h's interface, in
// h's namespace.
func openAFXDP(h *lab.Host, cfg afxdp.Config) (*afxdp.Device, error) {
	return openIn(h, func() (*afxdp.Device, error) { return afxdp.Open(h.Ifname, 0, cfg) })
}

// flow runs skb's pktgen on tx, A's device, sending 64-byte datagrams in
// the lab's frames with burst packets per doorbell, into skb's sink on rx,
// B's device, which counts the UDP frames to labPort; with rx nil nothing
// of skb receives (B's kernel stack or a C receiver takes the frames). It
// returns the run's sample.
func (le *labEnv) flow(ctx context.Context, e *env, tx, rx netdev.Device, burst int) (sample, error) {
	frame := le.frame
	fs := flowSpec{tx: tx, gen: traffic.PktgenConfig{Frame: &frame, Size: 64, Burst: burst}}
	if rx != nil {
		fs.rx = rx
		fs.sink = traffic.SinkConfig{Link: true, Port: labPort}
		if _, ok := rx.(*afxdp.Device); ok {
			fs.sink.Budget = afxdp.PollBudget // as C's xsk_rx takes all that is ready
		}
		fs.rxCount = func() uint64 { return rx.Stats().RxPackets }
	}
	r, err := runFlow(ctx, e, fs)
	if err != nil {
		return nil, err
	}
	return r.sample(), nil
}

// startAfpRecv starts the C receiver afp_recv on B, on the receiver CPU,
// and gives it cReady to bind. The caller must stop it.
func startAfpRecv(ctx context.Context, e *env, le *labEnv) (*cProc, error) {
	recv, err := e.startC(ctx, e.receiver, &le.l.B, "afp_recv",
		"-i", le.l.B.Ifname, "-I", "300", "-t", secsArg(e.dur+5*time.Second))
	if err != nil {
		return nil, err
	}
	time.Sleep(cReady)
	return recv, nil
}

// afpacketRun returns a run of skb's AF_PACKET pktgen on A into skb's
// AF_PACKET sink on B, or into the C receiver afp_recv when cRecv.
func afpacketRun(burst int, cRecv bool) func(context.Context, *env) (sample, error) {
	return labRun(func(ctx context.Context, e *env, le *labEnv) (sample, error) {
		tx, err := openAFPacket(&le.l.A, afpacket.Config{TxOnly: true})
		if err != nil {
			return nil, err
		}
		defer tx.Close()
		if cRecv {
			recv, err := startAfpRecv(ctx, e, le)
			if err != nil {
				return nil, err
			}
			defer recv.stop()
			s, err := le.flow(ctx, e, tx, nil, burst)
			if err != nil {
				return nil, err
			}
			out, err := recv.wait(6 * time.Second)
			if err != nil {
				return nil, err
			}
			rf, err := parseFigures(out, "RECV")
			if err != nil {
				return nil, err
			}
			if s[mRxPPS.Name], err = ppsOf(rf, "RECV", "afp_recv"); err != nil {
				return nil, err
			}
			cpuPer(s, mRxCPU.Name, rf, "dgrams")
			return s, nil
		}
		rx, err := openAFPacket(&le.l.B, afpacket.Config{Protocol: 0x0800})
		if err != nil {
			return nil, err
		}
		defer rx.Close()
		return le.flow(ctx, e, tx, rx, burst)
	})
}

// afxdpTxRun returns a run of skb's AF_XDP pktgen on A alone (B's kernel
// stack takes the frames), with burst descriptors per kick.
func afxdpTxRun(burst int) func(context.Context, *env) (sample, error) {
	return labRun(func(ctx context.Context, e *env, le *labEnv) (sample, error) {
		tx, err := openAFXDP(&le.l.A, afxdp.Config{TxOnly: true})
		if err != nil {
			return nil, err
		}
		defer tx.Close()
		return le.flow(ctx, e, tx, nil, burst)
	})
}

// afxdpRun returns a run of skb's AF_XDP pktgen on A (burst 64) into skb's
// AF_XDP sink on B (WaitSleep: 50 us naps when the ring is empty; copybreak
// off, so each frame reaches the sink in its UMEM buffer, as C's xsk_rx
// reads it in place), with B's NAPI threaded or not.
func afxdpRun(threaded bool) func(context.Context, *env) (sample, error) {
	return labRun(func(ctx context.Context, e *env, le *labEnv) (sample, error) {
		rx, err := openAFXDP(&le.l.B, afxdp.Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}, Wait: afxdp.WaitSleep})
		if err != nil {
			return nil, err
		}
		defer rx.Close()
		if threaded {
			if err := le.threaded(e); err != nil {
				return nil, err
			}
			defer le.l.SetThreaded(false)
		}
		tx, err := openAFXDP(&le.l.A, afxdp.Config{TxOnly: true})
		if err != nil {
			return nil, err
		}
		defer tx.Close()
		return le.flow(ctx, e, tx, rx, 64)
	})
}

// afxdpProcRun returns a run of `skb pktgen` on A's AF_XDP device (burst
// 64) into `skb sink` on B's, each run as a process of its own
// (Options.Tool) pinned to its CPU, as xsk_tx and xsk_rx run: the same
// waiting policy as afxdpRun's sink (50 us naps), copybreak off, a Poll
// budget of 512. afxdpRun's sender and receiver share the bench's Go
// runtime: a goroutine locked to its thread, as they are, gives its thread
// up and gets it back through another thread each time the runtime preempts
// it (every 10 ms of running), and the runtime's other threads are not
// pinned; on a CPU shared with B's NAPI thread, each such hand-off can leave
// the ring unserved for milliseconds. A process of one CPU has one thread of
// Go code on it and none of that. The figures are the tools' own results:
// pps over the first to the last packet, and each process's whole CPU time
// per packet, as the C programs report them.
func afxdpProcRun(threaded bool) func(context.Context, *env) (sample, error) {
	return labRun(func(ctx context.Context, e *env, le *labEnv) (sample, error) {
		a, b := &le.l.A, &le.l.B
		dst := netip.AddrPortFrom(b.Addr, labPort).String()
		recv, err := e.startProc(ctx, e.receiver, b, "skb sink", e.opts.Tool, "sink",
			"--dev", "afxdp:"+b.Ifname, "--copybreak", "0", "--listen", dst,
			"--duration", secsArg(e.dur+5*time.Second), "--idle", "300ms", "--json")
		if err != nil {
			return nil, err
		}
		defer recv.stop()
		if err := waitXDP(b, recv, 3*time.Second); err != nil {
			return nil, err
		}
		if threaded {
			if err := le.threaded(e); err != nil {
				return nil, err
			}
			// Off while the sink's program is attached: once it detaches,
			// the veth has no NAPI (GRO off), the kernel refuses the write
			// and keeps the flag, and the next variants would run
			// threaded. The sink waits 300 ms without a frame before it
			// ends; this runs as soon as pktgen has ended.
			defer le.l.SetThreaded(false)
		}
		send, err := e.startProc(ctx, e.sender, a, "skb pktgen", e.opts.Tool, "pktgen",
			"--dev", "afxdp:"+a.Ifname, "--dst", dst, "--burst", "64", "--no-udp-csum",
			"--duration", secsArg(e.dur), "--json")
		if err != nil {
			return nil, err
		}
		defer send.stop()
		sout, serr := send.wait(e.dur + 10*time.Second)
		if threaded {
			if err := le.l.SetThreaded(false); err != nil {
				return nil, fmt.Errorf("turn threaded NAPI off after the run: %w", err)
			}
		}
		return pairFigures(sout, serr, recv)
	})
}

// waitXDP waits until a program is attached to h's interface, which the
// AF_XDP device of the process p does as the last step of its Open (its
// socket bound, its fill ring full), or returns an error with p's output
// when p exits first or timeout passes.
func waitXDP(h *lab.Host, p *cProc, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); ; time.Sleep(5 * time.Millisecond) {
		attached, err := h.XDPAttached()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", p.name, err)
		case attached:
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it attached its XDP program: %s", p.name, oneLine(strings.TrimSpace(p.out.String()+" "+p.err.String())))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not attach its XDP program within %v", p.name, timeout)
		}
	}
}

// toolFigures is what the bench reads of the result object `skb pktgen
// --json` and `skb sink --json` end with.
type toolFigures struct {
	Type    string  `json:"type"`
	Packets uint64  `json:"packets"`
	PPS     float64 `json:"pps"`
	CPUUser float64 `json:"cpu_user"` // seconds
	CPUSys  float64 `json:"cpu_sys"`  // seconds
}

// cpuPer returns the process's CPU time per packet, in ns.
func (f toolFigures) cpuPer() float64 {
	return (f.CPUUser + f.CPUSys) * 1e9 / float64(f.Packets)
}

// toolResult returns the result object of a tool's --json output.
func toolResult(out, name string) (toolFigures, error) {
	for _, line := range strings.Split(out, "\n") {
		var r toolFigures
		if json.Unmarshal([]byte(line), &r) == nil && r.Type == "result" {
			return r, nil
		}
	}
	return toolFigures{}, fmt.Errorf("%w: no result object in %s's output %q", ErrNoResult, name, oneLine(strings.TrimSpace(out)))
}

// cAFPacketRun returns a run of afp_send -m mmsg -b 64 on A into afp_recv
// on B.
func cAFPacketRun() func(context.Context, *env) (sample, error) {
	return labRun(func(ctx context.Context, e *env, le *labEnv) (sample, error) {
		recv, err := startAfpRecv(ctx, e, le)
		if err != nil {
			return nil, err
		}
		defer recv.stop()
		return e.cSendRecv(ctx, recv, &le.l.A, "afp_send",
			"-i", le.l.A.Ifname, "-D", lab.MACB.String(), "-m", "mmsg", "-b", "64", "-s", "64", "-t", secsArg(e.dur))
	})
}

// cXskRetries is how many times a C AF_XDP program is started again when
// it could not bind (EBUSY for a few milliseconds after the last socket on
// the queue closed).
const cXskRetries = 5

// runXsk runs a C AF_XDP sender to completion, starting it again when its
// open failed, and returns its output.
func runXsk(ctx context.Context, e *env, name string, args ...string) (string, error) {
	var out string
	var err error
	for try := 0; try < cXskRetries; try++ {
		var p *cProc
		if p, err = e.startC(ctx, e.sender, &e.lab.l.A, name, args...); err != nil {
			return "", err
		}
		out, err = p.wait(e.dur + 10*time.Second)
		if !strings.Contains(out, "FAILED step=open") || ctx.Err() != nil {
			return out, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return out, fmt.Errorf("%s: %s", name, oneLine(out))
}

// cXskTxRun returns a run of xsk_tx -k k on A, transmit only.
func cXskTxRun(k int) func(context.Context, *env) (sample, error) {
	return labRun(func(ctx context.Context, e *env, le *labEnv) (sample, error) {
		out, err := runXsk(ctx, e, "xsk_tx", "-i", le.l.A.Ifname, "-D", lab.MACB.String(),
			"-s", "64", "-k", fmt.Sprint(k), "-t", secsArg(e.dur))
		if err != nil {
			return nil, err
		}
		f, err := parseFigures(out, "SEND")
		if err != nil {
			return nil, err
		}
		pps, err := ppsOf(f, "SEND", "xsk_tx")
		if err != nil {
			return nil, err
		}
		s := sample{mTxPPS.Name: pps}
		cpuPer(s, mTxCPU.Name, f, "pkts")
		return s, nil
	})
}

// cXskRun returns a run of xsk_tx -k 64 on A into xsk_rx -w usleep:50 on
// B, with B's NAPI threaded or not.
func cXskRun(threaded bool) func(context.Context, *env) (sample, error) {
	return labRun(func(ctx context.Context, e *env, le *labEnv) (sample, error) { return cXsk(ctx, e, le, threaded) })
}

func cXsk(ctx context.Context, e *env, le *labEnv, threaded bool) (sample, error) {
	var recv *cProc
	var err error
	for try := 0; ; try++ {
		recv, err = e.startC(ctx, e.receiver, &le.l.B, "xsk_rx",
			"-i", le.l.B.Ifname, "-w", "usleep:50", "-I", "300", "-t", secsArg(e.dur+5*time.Second))
		if err != nil {
			return nil, err
		}
		if recv.waitStderr("ready", 3*time.Second) {
			break
		}
		out, _ := recv.wait(time.Second)
		if try == cXskRetries || ctx.Err() != nil {
			return nil, fmt.Errorf("xsk_rx did not get ready: %s", oneLine(strings.TrimSpace(out+" "+recv.err.String())))
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer recv.stop()
	if threaded {
		// veth has NAPI once the XDP program is attached: now.
		if err := le.threaded(e); err != nil {
			return nil, err
		}
		defer le.l.SetThreaded(false)
	}
	sout, serr := runXsk(ctx, e, "xsk_tx", "-i", le.l.A.Ifname, "-D", lab.MACB.String(),
		"-s", "64", "-k", "64", "-t", secsArg(e.dur))
	if threaded {
		// Off before xsk_rx ends (300 ms without a frame) and detaches
		// its program, as in afxdpProcRun: after that the kernel refuses
		// the write and keeps the flag.
		if err := le.l.SetThreaded(false); err != nil {
			return nil, fmt.Errorf("turn threaded NAPI off after the run: %w", err)
		}
	}
	return recvFigures(recv, sout, serr)
}

// labNetdev is a compile-time check that the lab's devices are netdev
// devices, as the engines need.
var _ = []netdev.Device{(*afpacket.Device)(nil), (*afxdp.Device)(nil)}
