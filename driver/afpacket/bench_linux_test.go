//go:build linux

package afpacket

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/skb"
)

// BenchmarkXmit transmits from namespace A into a TPACKET_V3 receiver (this
// package's Poll) in namespace B, per transmit mode, burst (frames per
// doorbell) and frame size. It reports the sender's frames per second (pps),
// the fraction of frames the receiver got (rx_frac), and the sending
// thread's CPU time per frame (cpu-ns/frame, user and system, which
// includes the receive softirq work veth does on the sender's core): on a
// machine shared with other work, the steadier figure. The sender runs on
// CPU 0 and the receiver on CPU 1 when the machine has two. Each iteration
// allocates a buffer, copies a prebuilt frame into it and passes it to Xmit.
func BenchmarkXmit(b *testing.B) {
	l := newLab(b)
	fr := newFramer(l)
	rx := openIn(b, &l.B, Config{BlockSize: 1 << 20, BlockCount: 64, BlockTimeout: 10 * time.Millisecond})
	var got atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go receive(rx, &got, stop, done)
	b.Cleanup(func() { close(stop); <-done })
	for _, mode := range []TxMode{TxMmsg, TxRing} {
		tx := openIn(b, &l.A, Config{TxMode: mode, TxOnly: true})
		for _, burst := range []int{1, 64} {
			for _, size := range []int{64, 512, 1500} {
				name := fmt.Sprintf("mode=%v/burst=%d/size=%d", mode, burst, size)
				b.Run(name, func(b *testing.B) { benchXmit(b, l, fr, tx, &got, burst, size) })
			}
		}
	}
}

func benchXmit(b *testing.B, l *lab.Lab, fr *framer, tx *Device, got *atomic.Int64, burst, size int) {
	c := tx.Cache()
	hl := fr.uf.HeaderLen()
	payload := size - hl
	tmpl := make([]byte, size)
	t, _ := c.Alloc(size)
	fr.fill(t, 0, payload)
	copy(tmpl, t.Data())
	c.Free(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pin(0)
	b.ReportAllocs()
	b.SetBytes(int64(size))
	before := tx.Stats()
	got0 := got.Load()
	var ru0, ru1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		bf, err := c.Alloc(size)
		if err != nil {
			b.Fatal(err)
		}
		copy(bf.Put(size), tmpl)
		if err := tx.Xmit(bf, (i+1)%burst != 0 && i != b.N-1); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
	b.StopTimer()
	// Let the receiver catch up with the last blocks (retire timeout).
	time.Sleep(30 * time.Millisecond)
	s := tx.Stats().Sub(before)
	b.ReportMetric(float64(s.TxPackets)/el.Seconds(), "pps")
	b.ReportMetric(float64(got.Load()-got0)/float64(b.N), "rx_frac")
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/frame")
}

// receive polls d on CPU 1 until stop closes, counting frames.
func receive(d *Device, got *atomic.Int64, stop, done chan struct{}) {
	defer close(done)
	runtime.LockOSThread()
	pin(1)
	c := d.Cache()
	var n int64
	h := func(b *skb.Buff) { n++; c.Free(b) }
	for {
		select {
		case <-stop:
			return
		default:
		}
		d.Poll(256, h)
		got.Store(n)
		d.Wait(20 * time.Millisecond)
	}
}

// pin moves the calling (locked) thread to cpu, when the machine has it.
func pin(cpu int) {
	if runtime.NumCPU() <= cpu {
		return
	}
	var set unix.CPUSet
	set.Set(cpu)
	unix.SchedSetaffinity(0, &set)
}
