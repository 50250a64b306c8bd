//go:build linux

package udp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/mmsg"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// pin locks the calling goroutine to its thread and the thread to cpu, when
// the machine has more than one CPU. The returned function undoes it.
func pin(cpu int) func() {
	if runtime.NumCPU() < 2 {
		return func() {}
	}
	runtime.LockOSThread()
	var old, set unix.CPUSet
	unix.SchedGetaffinity(0, &old)
	set.Set(cpu % runtime.NumCPU())
	unix.SchedSetaffinity(0, &set)
	return func() {
		unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	}
}

// sink receives on d until stop is closed and the socket has been quiet for
// a moment, counting datagrams and bytes.
type sink struct {
	d       *Device
	stop    chan struct{}
	done    chan struct{}
	dgrams  uint64
	started bool
}

func startSink(b *testing.B, d *Device) *sink {
	s := &sink{d: d, stop: make(chan struct{}), done: make(chan struct{})}
	var ready sync.WaitGroup
	ready.Add(1)
	go func() {
		defer close(s.done)
		defer pin(1)()
		c := d.Cache()
		h := func(b *skb.Buff) {
			s.dgrams++
			c.Free(b)
		}
		ready.Done()
		stopped := false
		for {
			err := d.Wait(20 * time.Millisecond)
			if err == netdev.ErrTimeout {
				if stopped {
					return
				}
				select {
				case <-s.stop:
					stopped = true
				default:
				}
				continue
			}
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := d.Poll(64, h); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	ready.Wait()
	return s
}

func (s *sink) finish() uint64 {
	close(s.stop)
	<-s.done
	return s.dgrams
}

// BenchmarkXmit sends b.N datagrams of each size into a receiving device on
// loopback, in bursts of 1 (a doorbell each) and 64 (one doorbell per 64),
// with GSO coalescing the bursts of 64, and as GSO super-packets of 64
// segments; sender and receiver are pinned to different CPUs. It reports
// the sender's rate (pps) and what the receiver got (rx-pps, loss%); on
// loopback the sender's CPU does most of the receive work, so pps is the
// figure to compare with udp_send of the C references.
func BenchmarkXmit(b *testing.B) {
	for _, mode := range []struct {
		name       string
		burst      int
		gso, super bool
	}{
		{"burst=1", 1, false, false},
		{"burst=64", 64, false, false},
		{"burst=64/gso", 64, true, false},
		{"super=64/gso", 1, true, true},
	} {
		for _, size := range []int{64, 512, 1500, 9000} {
			if mode.super && size*64 > MaxDatagram4 {
				continue // a super-packet is one IP packet: at most 64 KiB
			}
			b.Run(fmt.Sprintf("%s/size=%d", mode.name, size), func(b *testing.B) {
				benchXmit(b, mode.burst, size, mode.gso, mode.super)
			})
		}
	}
}

func benchXmit(b *testing.B, burst, size int, gso, super bool) {
	rx := openT(b, Config{Local: lo4, RcvBuf: 16 << 20, RecvSize: max(size, 1500)})
	tx := openT(b, Config{Remote: rx.LocalAddr(), GSO: gso, SndBuf: 4 << 20})
	s := startSink(b, rx)
	defer pin(0)()
	c := tx.Cache()
	perXmit := 1
	if super {
		perXmit = 64
	}
	b.ReportAllocs()
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	sent := 0
	for sent < b.N {
		for i := range burst {
			n := size * perXmit
			pb, err := c.Alloc(n)
			if err != nil {
				b.Fatal(err)
			}
			pattern(pb.Put(n)[:min(n, 64)], uint32(sent))
			if super {
				pb.SetGSO(size, perXmit, skb.GSOUDPL4)
			}
			if err := tx.Xmit(pb, i < burst-1 && sent+perXmit < b.N); err != nil {
				b.Fatal(err)
			}
			sent += perXmit
		}
	}
	el := time.Since(start)
	b.StopTimer()
	got := s.finish()
	b.ReportMetric(float64(sent)/el.Seconds(), "pps")
	b.ReportMetric(float64(got)/el.Seconds(), "rx-pps")
	b.ReportMetric(100*float64(uint64(sent)-min(got, uint64(sent)))/float64(sent), "loss%")
}

// BenchmarkPingPong measures the round trip of a 64-byte datagram between two
// devices on loopback pinned to different CPUs, the receiver sleeping in the
// kernel (block) or spinning (busy, Config.BusyPoll); an op is one round
// trip, and p50-us its median. The Go scheduler takes the P of a goroutine
// that sleeps in a system call when no other P is idle, and the goroutine
// then needs one back when it wakes: the benchmark leaves an idle P (raising
// GOMAXPROCS to 4 for its duration), as a program that cares about latency
// does.
func BenchmarkPingPong(b *testing.B) {
	for _, busy := range []bool{false, true} {
		name := "block"
		if busy {
			name = "busy"
		}
		b.Run(name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
			var bp time.Duration
			if busy {
				bp = 50 * time.Microsecond
			}
			srv := openT(b, Config{Local: lo4, BusyPoll: bp})
			cli := openT(b, Config{Remote: srv.LocalAddr(), BusyPoll: bp})
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer pin(1)()
				echo := func(p *skb.Buff) {
					if err := srv.XmitTo(p, srv.Src(), false); err != nil {
						b.Error(err)
					}
				}
				for {
					err := srv.Wait(20 * time.Millisecond)
					select {
					case <-stop:
						return
					default:
					}
					if err == netdev.ErrTimeout {
						continue
					}
					if err != nil {
						b.Error(err)
						return
					}
					if _, err := srv.Poll(64, echo); err != nil {
						b.Error(err)
						return
					}
				}
			}()
			defer func() {
				close(stop)
				<-done
			}()
			defer pin(0)()
			c := cli.Cache()
			got := false
			h := func(p *skb.Buff) {
				got = true
				c.Free(p)
			}
			rtt := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.SetBytes(64)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				p, err := c.Alloc(64)
				if err != nil {
					b.Fatal(err)
				}
				p.Put(64)
				if err := cli.Xmit(p, false); err != nil {
					b.Fatal(err)
				}
				for got = false; !got; {
					if err := cli.Wait(time.Second); err != nil {
						b.Fatal(err)
					}
					if _, err := cli.Poll(1, h); err != nil {
						b.Fatal(err)
					}
				}
				rtt[i] = time.Since(t0)
			}
			b.StopTimer()
			slices.Sort(rtt)
			b.ReportMetric(float64(rtt[len(rtt)/2])/1e3, "p50-us")
			b.ReportMetric(float64(rtt[len(rtt)*99/100])/1e3, "p99-us")
		})
	}
}

// BenchmarkGROSplit measures what Poll costs per datagram to split a GRO
// train of up to 64 datagrams into buffers, by the way it hands them over:
// as copies (copybreak above the segment size), as clones of the train's
// buffer (copybreak off), or as the default mix (copies under 256 bytes).
// The train is laid in the receive slot as recvmmsg would leave it (length
// and UDP_GRO control message), so that no system call is timed; the
// handler frees each buffer at once.
func BenchmarkGROSplit(b *testing.B) {
	for _, seg := range []int{64, 512, 1400} {
		for _, cb := range []struct {
			name string
			v    int
		}{{"default", 0}, {"copy", 4096}, {"clone", netdev.CopybreakOff}} {
			b.Run(fmt.Sprintf("seg=%d/%s", seg, cb.name), func(b *testing.B) {
				rx := openT(b, Config{Config: netdev.Config{Copybreak: cb.v}, Local: lo4, GRO: true})
				segs := min(MaxGSOSegments, MaxDatagram4/seg)
				h := func(p *skb.Buff) { rx.Cache().Free(p) }
				b.ReportAllocs()
				b.SetBytes(int64(seg))
				b.ResetTimer()
				for done := 0; done < b.N; done += segs {
					fakeTrain(rx, seg, segs)
					if n, err := rx.Poll(segs, h); n != segs || err != nil {
						b.Fatalf("Poll: %d, %v; want %d", n, err, segs)
					}
				}
			})
		}
	}
}

// fakeTrain leaves in d's first receive slot what recvmmsg leaves there for
// a GRO train of segs datagrams of seg bytes, as the only message pending.
func fakeTrain(d *Device, seg, segs int) {
	r := &d.rx
	d.post(1)
	hd := &r.batch.Hdrs[0]
	hd.Len = uint32(seg * segs)
	c := r.batch.Ctrl(0)
	binary.NativeEndian.PutUint64(c[0:], uint64(unix.CmsgLen(4)))
	binary.NativeEndian.PutUint32(c[8:], unix.SOL_UDP)
	binary.NativeEndian.PutUint32(c[12:], unix.UDP_GRO)
	binary.NativeEndian.PutUint32(c[16:], uint32(seg))
	hd.Hdr.SetControllen(unix.CmsgSpace(4))
	r.n, r.next, r.off, r.dirty, r.drained = 1, 0, 0, 1, true
}

// BenchmarkPollEmpty measures the busy-polling probe: Poll(1) on a
// connected device whose socket holds nothing, against the bare
// non-blocking recvfrom(2) it makes. The difference is what skb adds to
// every spin of a busy-polling loop (the reference counting that keeps the
// socket open under a concurrent Close, the posted slot, the frame Poll
// adds around the call); on a ping-pong it shows up several times over in
// the round trip, since a heavier spin slows the peer on the sibling
// hyperthread. BusyPoll spins in rounds of spinTries probes with nothing
// between them: its ns/probe is what each probe of its spin costs (on
// this host, 2026-12-02: 1300-1330 ns a probe, against 1370-1400 ns a
// Poll and 1325-1490 ns a bare recvfrom).
func BenchmarkPollEmpty(b *testing.B) {
	srv := openT(b, Config{Local: lo4})
	cli := openT(b, Config{Remote: srv.LocalAddr()})
	h := func(p *skb.Buff) { cli.Cache().Free(p) }
	b.Run("Poll", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if n, err := cli.Poll(1, h); n != 0 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	buf := make([]byte, 2048)
	b.Run("recvfrom", func(b *testing.B) {
		for range b.N {
			if _, e := mmsg.RecvfromNow(cli.fd, buf, nil, nil); e != unix.EAGAIN {
				b.Fatal(e)
			}
		}
	})
	// BusyPoll's rounds (an op is a BusyPoll of 1 ns: two rounds, the
	// one that sets the deadline and one after it): ns per probe, from
	// the device's count of receive calls.
	b.Run("BusyPoll", func(b *testing.B) {
		b.ReportAllocs()
		calls := cli.rx.calls
		for range b.N {
			if n, err := cli.BusyPoll(1, h, time.Nanosecond); n != 0 || err != nil {
				b.Fatal(n, err)
			}
		}
		if probes := cli.rx.calls - calls; probes > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(probes), "ns/probe")
		}
	})
}

// BenchmarkExchange measures what the driver adds to one datagram's trip
// through the kernel: a device connected to itself sends a 64-byte datagram
// with Xmit and takes it back with Poll (the copybreak copy included), as
// each end of a ping-pong does once per round trip; "raw" makes the same
// two system calls on the socket with nothing around them; "busypoll"
// takes the datagram back with BusyPoll, whose first probe finds it: the
// way from its spin to the handler costs what Poll's does (on this host,
// 2026-12-02: skb 4330-4460, busypoll 4400-4490, raw 4080-4130 ns). ns per
// exchange, on loopback (the send delivers the datagram before it returns).
func BenchmarkExchange(b *testing.B) {
	// A free port, for a socket bound to it and connected to itself.
	free := openT(b, Config{Local: lo4})
	port := free.LocalAddr()
	free.Close()
	d := openT(b, Config{Local: port, Remote: port})
	c := d.Cache()
	got := false
	h := func(p *skb.Buff) { got = true; c.Free(p) }
	for _, v := range []struct {
		name string
		recv func() (int, error)
	}{
		{"skb", func() (int, error) { return d.Poll(1, h) }},
		{"busypoll", func() (int, error) { return d.BusyPoll(1, h, time.Second) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			defer pin(0)()
			b.ReportAllocs()
			for range b.N {
				p, err := c.Alloc(64)
				if err != nil {
					b.Fatal(err)
				}
				p.Put(64)
				if err := d.Xmit(p, false); err != nil {
					b.Fatal(err)
				}
				for got = false; !got; {
					if _, err := v.recv(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	buf := make([]byte, 2048)
	b.Run("raw", func(b *testing.B) {
		defer pin(0)()
		for range b.N {
			if e := mmsg.SendtoNow(d.fd, buf[:64], nil, 0); e != 0 {
				b.Fatal(e)
			}
			for {
				if _, e := mmsg.RecvfromNow(d.fd, buf, nil, nil); e == 0 {
					break
				} else if e != unix.EAGAIN {
					b.Fatal(e)
				}
			}
		}
	})
}
