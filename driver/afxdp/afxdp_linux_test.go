package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// TestMain fails the package on leaked buffers, file descriptors or
// goroutines once the tests passed.
func TestMain(m *testing.M) {
	// The runtime's network poller opens its epoll and eventfd descriptors
	// on first use: make that happen before counting.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	fds := fdCount()
	goroutines := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		if err := pool.CheckLeaks(); err != nil {
			fmt.Fprintf(os.Stderr, "afxdp: buffers leaked after the tests passed:\n%v\n", err)
			code = 1
		}
		// Goroutines of timers and finalizers end a little after the tests.
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > goroutines {
			fmt.Fprintf(os.Stderr, "afxdp: %d goroutines leaked after the tests passed\n", n-goroutines)
			code = 1
		}
		if n := fdCount(); n > fds {
			fmt.Fprintf(os.Stderr, "afxdp: %d file descriptors leaked after the tests passed\n", n-fds)
			code = 1
		}
	}
	os.Exit(code)
}

func fdCount() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// testPort is the UDP port the test frames are sent to.
const testPort = 9000

// openOn opens queue 0 of h's veth end inside h's namespace and closes it
// when the test ends.
func openOn(t testing.TB, h *lab.Host, cfg Config) *Device {
	t.Helper()
	var d *Device
	if err := h.Do(func() (err error) { d, err = Open(h.Ifname, 0, cfg); return err }); err != nil {
		t.Fatalf("open %s: %v", h.Ifname, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil && !errors.Is(err, netdev.ErrClosed) {
			t.Errorf("close %s: %v", h.Ifname, err)
		}
	})
	return d
}

// frameTo describes a UDP frame from host src to host dst of the lab.
func frameTo(src, dst *lab.Host) header.UDPFrame {
	var f header.UDPFrame
	copy(f.Source[:], src.MAC)
	copy(f.Destination[:], dst.MAC)
	f.SourceIP, f.DestinationIP = src.Addr, dst.Addr
	f.SourcePort, f.DestinationPort = 12345, testPort
	return f
}

// fill writes into the empty buffer b a frame f with payload bytes of
// payload, the first four holding seq (big-endian), the rest a pattern
// derived from seq.
func fill(tb testing.TB, b *skb.Buff, f *header.UDPFrame, seq uint32, payload int) {
	hl := f.HeaderLen()
	p := b.Put(hl + payload)
	binary.BigEndian.PutUint32(p[hl:], seq)
	for i := 4; i < payload; i++ {
		p[hl+i] = byte(seq) + byte(i)
	}
	if _, err := header.BuildUDP(p, f); err != nil {
		tb.Fatalf("build frame: %v", err)
	}
}

// xmitFilled sends n frames f from a, each filled with 100 bytes of payload
// and its index as sequence number, with one doorbell for the lot.
func xmitFilled(tb testing.TB, a *Device, f *header.UDPFrame, n int) {
	tb.Helper()
	for i := range n {
		buf, err := a.Alloc(0)
		if err != nil {
			tb.Fatal(err)
		}
		fill(tb, buf, f, uint32(i), 100)
		if err := a.Xmit(buf, i != n-1); err != nil {
			tb.Fatal(err)
		}
	}
}

// parse returns the sequence number and payload length of a test frame, ok
// false for anything else; it checks the payload pattern and the checksums.
func parse(b *skb.Buff) (seq uint32, payload int, ok bool) { return parseFrame(b, true) }

// parseFrame is parse, checking the UDP checksum only when l4sum is true: a
// datagram the kernel sends through a veth with transmit checksumming on
// leaves with only the pseudo-header sum in it (CHECKSUM_PARTIAL, never
// finished on a virtual link), and XDP sees it that way.
func parseFrame(b *skb.Buff, l4sum bool) (seq uint32, payload int, ok bool) {
	data := b.Data()
	fr, err := header.ParseFrame(data)
	if err != nil || fr.Protocol != header.IPProtoUDP || fr.PayloadOffset == 0 {
		return 0, 0, false
	}
	if header.UDP(data[fr.TransportOffset:]).DestinationPort() != testPort {
		return 0, 0, false
	}
	if l4sum && fr.VerifyChecksum(data) != nil {
		return 0, 0, false
	}
	pl := data[fr.PayloadOffset:fr.End]
	if len(pl) < 4 {
		return 0, 0, false
	}
	seq = binary.BigEndian.Uint32(pl)
	for i := 4; i < len(pl); i++ {
		if pl[i] != byte(seq)+byte(i) {
			return 0, 0, false
		}
	}
	return seq, len(pl), true
}

// receive polls d until it has n test frames or timeout passes, and returns
// their sequence numbers in arrival order. check, if set, sees each buffer
// before it is freed.
func receive(t testing.TB, d *Device, n int, timeout time.Duration, check func(*skb.Buff)) []uint32 {
	t.Helper()
	return receiveFrames(t, d, n, timeout, true, check)
}

// receiveFrames is receive, checking the UDP checksum only when l4sum is
// true (see parseFrame).
func receiveFrames(t testing.TB, d *Device, n int, timeout time.Duration, l4sum bool, check func(*skb.Buff)) []uint32 {
	t.Helper()
	var seqs []uint32
	h := func(b *skb.Buff) {
		if check != nil {
			check(b)
		}
		if s, _, ok := parseFrame(b, l4sum); ok {
			seqs = append(seqs, s)
		}
		d.Cache().Free(b)
	}
	deadline := time.Now().Add(timeout)
	for len(seqs) < n && time.Now().Before(deadline) {
		if _, err := d.Poll(64, h); err != nil {
			t.Fatalf("poll: %v", err)
		}
		if len(seqs) >= n {
			break
		}
		if err := d.Wait(20 * time.Millisecond); err != nil && !errors.Is(err, netdev.ErrTimeout) {
			t.Fatalf("wait: %v", err)
		}
	}
	return seqs
}

// xdpAttached reports whether an XDP program is attached to h's veth end,
// as netlink (IFLA_XDP) says.
func xdpAttached(t testing.TB, h *lab.Host) bool {
	t.Helper()
	attached, err := h.XDPAttached()
	if err != nil {
		t.Fatal(err)
	}
	return attached
}

func wantInOrder(t testing.TB, seqs []uint32, n int) {
	t.Helper()
	if len(seqs) != n {
		t.Fatalf("received %d frames, want %d", len(seqs), n)
	}
	for i, s := range seqs {
		if s != uint32(i) {
			t.Fatalf("frame %d carries seq %d: reordered, lost or duplicated (%v)", i, s, seqs)
		}
	}
}

func TestModesAndDetach(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	tests := []struct {
		name   string
		cfg    Config
		attach AttachMode
	}{
		{"auto", Config{}, AttachNative},
		{"native", Config{Attach: AttachNative, Bind: BindCopy}, AttachNative},
		{"generic", Config{Attach: AttachGeneric}, AttachGeneric},
		{"txonly", Config{TxOnly: true}, AttachNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openOn(t, &l.B, tt.cfg)
			m := d.Mode()
			t.Logf("%s: %v (zero-copy refused: %v)", l.B.Ifname, m, m.ZeroCopyErr)
			if m.Attach != tt.attach || m.Bind != BindCopy {
				t.Errorf("mode %v, want xdp %v, bind copy (veth has no zero-copy)", m, tt.attach)
			}
			if tt.cfg.Bind == BindAuto && !errors.Is(m.ZeroCopyErr, unix.EOPNOTSUPP) {
				t.Errorf("zero-copy refusal %v, want EOPNOTSUPP from veth", m.ZeroCopyErr)
			}
			if got, want := xdpAttached(t, &l.B), tt.attach != AttachNone; got != want {
				t.Errorf("program attached %v while open, want %v", got, want)
			}
			if err := d.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if xdpAttached(t, &l.B) {
				t.Errorf("a program stays attached after Close")
			}
			if err := d.Close(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("second close: %v, want net.ErrClosed", err)
			}
		})
	}
}

// TestOpenConfigErrors checks the configuration errors Open returns before
// it makes anything (no privileges needed): each matches ErrConfig and
// netdev.ErrConfig, and says what is wrong once.
func TestOpenConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		ifname string
		queue  int
		cfg    Config
		want   string
	}{
		{"", 0, Config{}, "afxdp: open: invalid config: no interface name"},
		{"lo", -1, Config{}, "afxdp: open lo queue -1: invalid config: negative queue"},
		{"lo", 0, Config{RingSize: 3}, "afxdp: open lo queue 0: invalid config: "},
		{"lo", 0, Config{Config: netdev.Config{Headroom: -5}}, "afxdp: open lo queue 0: netdev: invalid config: headroom -5"},
	} {
		d, err := Open(tt.ifname, tt.queue, tt.cfg)
		if err == nil {
			d.Close()
			t.Fatalf("Open(%q, %d) succeeded", tt.ifname, tt.queue)
		}
		if !errors.Is(err, ErrConfig) || !errors.Is(err, netdev.ErrConfig) || !strings.HasPrefix(err.Error(), tt.want) || strings.Count(err.Error(), "invalid config") != 1 {
			t.Errorf("Open(%q, %d, %+v): %q; want ErrConfig, netdev.ErrConfig, starting %q", tt.ifname, tt.queue, tt.cfg, err, tt.want)
		}
	}
	if _, err := ParseWaitPolicy("nap"); !errors.Is(err, netdev.ErrConfig) || err.Error() != `afxdp: invalid config: wait policy "nap": want sleep, spin or poll` {
		t.Errorf("ParseWaitPolicy: %v", err)
	}
}

func TestOpenFailureReleasesAll(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	tests := []struct {
		name   string
		h      *lab.Host
		ifname string
		queue  int
		cfg    Config
		want   error
		prefix string
	}{
		{"queue the veth lacks", &l.B, l.B.Ifname, 7, Config{}, unix.EINVAL, "afxdp: bind auto " + l.B.Ifname + " queue 7: "},
		{"zero-copy on veth", &l.B, l.B.Ifname, 0, Config{Bind: BindZeroCopy}, unix.EOPNOTSUPP, "afxdp: bind zerocopy " + l.B.Ifname + " queue 0: "},
		{"native on loopback", &l.B, "lo", 0, Config{Attach: AttachNative}, nil, "afxdp: xdp lo queue 0: "},
		{"no interface", &l.B, "nosuch0", 0, Config{}, nil, "afxdp: open nosuch0 queue 0: "},
		{"headroom past the frame", &l.B, l.B.Ifname, 0, Config{Config: netdev.Config{Headroom: 2048}}, ErrConfig, ""},
		{"frame size", &l.B, l.B.Ifname, 0, Config{FrameSize: 1000}, ErrConfig, ""},
		{"ring size", &l.B, l.B.Ifname, 0, Config{RingSize: 1000}, ErrConfig, ""},
		{"too few frames", &l.B, l.B.Ifname, 0, Config{Frames: 100}, ErrConfig, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fdCount()
			var d *Device
			err := tt.h.Do(func() (err error) { d, err = Open(tt.ifname, tt.queue, tt.cfg); return err })
			if err == nil {
				d.Close()
				t.Fatalf("Open succeeded")
			}
			t.Logf("%v", err)
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v, want one wrapping %v", err, tt.want)
			}
			if tt.want == ErrConfig && (!errors.Is(err, netdev.ErrConfig) || !strings.Contains(err.Error(), ": invalid config: ")) {
				t.Errorf("error %q does not match netdev.ErrConfig or say invalid config once", err)
			}
			if !strings.HasPrefix(err.Error(), tt.prefix) {
				t.Errorf("error %q, want it to start %q", err, tt.prefix)
			}
			if after := fdCount(); after != before {
				t.Errorf("%d file descriptors before Open, %d after it failed", before, after)
			}
			if xdpAttached(t, &l.B) {
				t.Errorf("a program stays attached after the failed Open")
			}
		})
	}
}

// TestQueues opens both queues of a two-queue veth on each side: the
// receiving devices share one program, each gets the frames of its queue,
// and the program stays attached until the last of them closes.
func TestQueues(t *testing.T) {
	l := labtest.New(t, lab.Options{Queues: 2})
	var tx, rx [2]*Device
	for q := range 2 {
		for _, side := range []struct {
			h   *lab.Host
			d   **Device
			cfg Config
		}{{&l.A, &tx[q], Config{TxOnly: true}}, {&l.B, &rx[q], Config{}}} {
			if err := side.h.Do(func() (err error) { *side.d, err = Open(side.h.Ifname, q, side.cfg); return err }); err != nil {
				t.Fatalf("open %s queue %d: %v", side.h.Ifname, q, err)
			}
			d := *side.d
			t.Cleanup(func() { d.Close() })
		}
		if m := rx[q].Mode(); m.Attach != AttachNative {
			t.Errorf("queue %d: mode %v, want native", q, m)
		}
	}
	f := frameTo(&l.A, &l.B)
	const n = 32
	for q := range 2 {
		for i := range n {
			b, err := tx[q].Alloc(0)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, b, &f, uint32(i), 10+q)
			if err := tx[q].Xmit(b, i != n-1); err != nil {
				t.Fatal(err)
			}
		}
	}
	for q := range 2 {
		var sizes []int
		seqs := receive(t, rx[q], n, 2*time.Second, func(b *skb.Buff) {
			if _, pl, ok := parse(b); ok {
				sizes = append(sizes, pl)
			}
			if b.QueueMapping() != q {
				t.Errorf("queue %d received a buffer with queue mapping %d", q, b.QueueMapping())
			}
		})
		wantInOrder(t, seqs, n)
		for _, pl := range sizes {
			if pl != 10+q {
				t.Fatalf("queue %d received a frame sent on queue %d", q, pl-10)
			}
		}
	}
	if err := rx[0].Close(); err != nil {
		t.Fatal(err)
	}
	if !xdpAttached(t, &l.B) {
		t.Fatalf("closing queue 0 detached the program queue 1 still uses")
	}
	if err := rx[1].Close(); err != nil {
		t.Fatal(err)
	}
	if xdpAttached(t, &l.B) {
		t.Fatalf("a program stays attached after both queues closed")
	}
}

func TestRebindRightAfterClose(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	for i := range 3 {
		d := openOn(t, &l.B, Config{})
		if err := d.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
}

// TestQueueInUse opens a queue another device holds: Open fails with
// EBUSY, saying the queue is in use, after one wait of bindBusyWait (not
// one for zero-copy and another for copy mode).
func TestQueueInUse(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	openOn(t, &l.B, Config{})
	start := time.Now()
	var d *Device
	err := l.B.Do(func() (err error) { d, err = Open(l.B.Ifname, 0, Config{}); return err })
	if err == nil {
		d.Close()
		t.Fatal("a second device opened a queue the first holds")
	}
	if !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "the queue is in use by another AF_XDP socket") {
		t.Errorf("open of a queue in use: %v, want EBUSY saying the queue is in use", err)
	}
	if el := time.Since(start); el > bindBusyWait+time.Second/2 {
		t.Errorf("open of a queue in use took %v, want one wait of %v", el, bindBusyWait)
	}
}

// TestToKernel sends frames from AF_XDP in A to a plain UDP socket in B:
// zero-copy from UMEM frames, copied from the pool's small class, and copied
// from another pool.
func TestToKernel(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	var conn *net.UDPConn
	if err := l.B.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: l.B.Addr.AsSlice(), Port: testPort})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	other, err := pool.New(pool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := other.Close(); err != nil {
			t.Error(err)
		}
	}()
	tx := openOn(t, &l.A, Config{TxOnly: true})
	f := frameTo(&l.A, &l.B)
	const n = 96
	got := make(chan []uint32, 1)
	go func() {
		var seqs []uint32
		buf := make([]byte, 2048)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for len(seqs) < n {
			k, err := conn.Read(buf)
			if err != nil {
				break
			}
			if k >= 4 {
				seqs = append(seqs, binary.BigEndian.Uint32(buf))
			}
		}
		got <- seqs
	}()
	for i := range n {
		var b *skb.Buff
		var err error
		payload := 18 + i*10
		switch i % 3 {
		case 0:
			b, err = tx.Alloc(f.HeaderLen() + payload)
		case 1:
			// Small enough for the pool's copybreak class: copied.
			payload = 18 + i
			b, err = tx.Cache().Alloc(f.HeaderLen() + payload)
		case 2:
			b, err = other.Alloc(f.HeaderLen() + payload)
		}
		if err != nil {
			t.Fatal(err)
		}
		fill(t, b, &f, uint32(i), payload)
		if err := tx.Xmit(b, i%8 != 7); err != nil {
			t.Fatalf("xmit %d: %v", i, err)
		}
	}
	wantInOrder(t, <-got, n)
	st := tx.Stats()
	xs, err := tx.XDPStats()
	if err != nil {
		t.Fatal(err)
	}
	if st.TxPackets != n || st.TxDoorbells != n/8 || xs.TxCopied != 2*n/3 {
		t.Errorf("tx_packets %d tx_doorbells %d copied %d, want %d, %d, %d", st.TxPackets, st.TxDoorbells, xs.TxCopied, n, n/8, 2*n/3)
	}
}

// TestFromKernel sends datagrams from a UDP socket in A to AF_XDP in B and
// checks the frames and their buffers: UMEM frames with the XDP headroom, or
// copybreak copies.
func TestFromKernel(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	tests := []struct {
		name      string
		cfg       Config
		headroom  int
		copybreak bool
	}{
		{"default", Config{}, XDPHeadroom, true},
		{"copybreak off", Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}}, XDPHeadroom, false},
		{"headroom 512", Config{Config: netdev.Config{Headroom: 512, Copybreak: netdev.CopybreakOff}}, 512, false},
		{"4096-byte frames", Config{FrameSize: 4096, Config: netdev.Config{Copybreak: netdev.CopybreakOff}}, XDPHeadroom, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rx := openOn(t, &l.B, tt.cfg)
			var conn *net.UDPConn
			if err := l.A.Do(func() (err error) {
				conn, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: l.B.Addr.AsSlice(), Port: testPort})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			const n = 64
			buf := make([]byte, 1400)
			for i := range n {
				size := 64 + i*20
				binary.BigEndian.PutUint32(buf, uint32(i))
				for j := 4; j < size; j++ {
					buf[j] = byte(i) + byte(j)
				}
				if _, err := conn.Write(buf[:size]); err != nil {
					t.Fatal(err)
				}
			}
			bad := 0
			seqs := receiveFrames(t, rx, n, 3*time.Second, false, func(b *skb.Buff) {
				_, payload, ok := parseFrame(b, false)
				if !ok {
					return
				}
				copied := payload+42 < 256
				umem := rx.Pool().Owns(b) && b.End() == rx.FrameSize()
				if tt.copybreak && copied == umem || !tt.copybreak && !umem ||
					b.Headroom() != tt.headroom || b.Protocol() != header.EtherTypeIPv4 || b.MacOffset() != 0 {
					if bad++; bad < 4 {
						t.Errorf("frame of %d: in a UMEM frame %v, headroom %d, protocol %#x, mac offset %d",
							b.Len(), umem, b.Headroom(), b.Protocol(), b.MacOffset())
					}
				}
			})
			wantInOrder(t, seqs, n)
			st := rx.Stats()
			if st.RxPackets != n || tt.copybreak != (st.RxCopybreak > 0) {
				t.Errorf("rx_packets %d rx_copybreak %d", st.RxPackets, st.RxCopybreak)
			}
		})
	}
}

// TestBetweenDevices sends from AF_XDP in A to AF_XDP in B in bursts of 1
// and 64, then echoes frames back from B to A without a copy.
func TestBetweenDevices(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	a := openOn(t, &l.A, Config{})
	b := openOn(t, &l.B, Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}})
	f := frameTo(&l.A, &l.B)
	for _, burst := range []int{1, 64} {
		t.Run(fmt.Sprintf("burst %d", burst), func(t *testing.T) {
			const n = 256
			st0 := a.Stats()
			seq := 0
			var seqs []uint32
			for seq < n {
				for i := range burst {
					buf, err := a.Alloc(0)
					if err != nil {
						t.Fatal(err)
					}
					fill(t, buf, &f, uint32(seq), 18+seq%1000)
					seq++
					if err := a.Xmit(buf, i != burst-1); err != nil {
						t.Fatalf("xmit: %v", err)
					}
				}
				// Receive as we go: a veth queue holds 256 frames.
				seqs = append(seqs, receive(t, b, burst, time.Second, nil)...)
			}
			wantInOrder(t, seqs, n)
			d := a.Stats().Sub(st0)
			if d.TxPackets != n || d.TxDoorbells != uint64(n/burst) {
				t.Errorf("tx_packets %d tx_doorbells %d, want %d and %d", d.TxPackets, d.TxDoorbells, n, n/burst)
			}
		})
	}
	t.Run("echo", func(t *testing.T) {
		const n = 64
		xmitFilled(t, a, &f, n)
		// B turns each frame around in place and sends it from where it lies.
		echoed := 0
		deadline := time.Now().Add(2 * time.Second)
		for echoed < n && time.Now().Before(deadline) {
			b.Wait(10 * time.Millisecond)
			b.Poll(64, func(buf *skb.Buff) {
				eth := header.Ethernet(buf.Data())
				src, dst := eth.Source(), eth.Destination()
				eth.SetSource(dst)
				eth.SetDestination(src)
				if err := b.Xmit(buf, true); err != nil {
					t.Errorf("echo: %v", err)
				}
				echoed++
			})
			b.Flush()
		}
		seqs := receive(t, a, n, 2*time.Second, nil)
		wantInOrder(t, seqs, n)
		if xs, _ := b.XDPStats(); xs.TxCopied != 0 {
			t.Errorf("echo copied %d frames, want none", xs.TxCopied)
		}
	})
}

// TestPrivateUMEM runs both directions on a pool without a contiguous
// class: the driver's own UMEM, every frame copied to and from the pool.
func TestPrivateUMEM(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	p, err := pool.New(pool.Config{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Config: netdev.Config{Pool: p, Headroom: 200}}
	a := openOn(t, &l.A, cfg)
	b := openOn(t, &l.B, cfg)
	if !a.Mode().PrivateUMEM || !strings.HasSuffix(a.Mode().String(), ", private umem") {
		t.Errorf("mode %v, want a private umem", a.Mode())
	}
	f := frameTo(&l.A, &l.B)
	const n = 64
	for i := range n {
		buf, err := a.Cache().Alloc(f.HeaderLen() + 1000)
		if err != nil {
			t.Fatal(err)
		}
		fill(t, buf, &f, uint32(i), 4+i*15)
		if err := a.Xmit(buf, i != n-1); err != nil {
			t.Fatal(err)
		}
	}
	bad := 0
	seqs := receive(t, b, n, 2*time.Second, func(buf *skb.Buff) {
		if buf.DataHome() != p || buf.Headroom() < 200 {
			bad++
		}
	})
	wantInOrder(t, seqs, n)
	if bad > 0 {
		t.Errorf("%d received buffers not in the pool given, or with less than 200 bytes of headroom", bad)
	}
	if xs, _ := a.XDPStats(); xs.TxCopied != n {
		t.Errorf("copied %d frames at transmit, want %d", xs.TxCopied, n)
	}
	for _, d := range []*Device{a, b} {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("pool: %v", err)
	}
}

// TestPeerDrops makes the peer drop frames that Xmit accepted: B's MTU is
// lowered below A's, so veth drops A's long frames (is_skb_forwardable) and
// the kernel answers the doorbell with EBUSY while their descriptors still
// complete. The short frames around them must all arrive, in order, and the
// counters must add up.
func TestPeerDrops(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	if err := l.B.Do(func() error {
		link, err := netlink.LinkByName(l.B.Ifname)
		if err != nil {
			return err
		}
		return netlink.LinkSetMTU(link, 1000)
	}); err != nil {
		t.Fatalf("lower B's MTU: %v", err)
	}
	tx := openOn(t, &l.A, Config{TxOnly: true})
	rx := openOn(t, &l.B, Config{})
	f := frameTo(&l.A, &l.B)
	const n, every = 200, 5
	long, short := 0, 0
	var seqs []uint32
	for i := range n {
		b, err := tx.Alloc(0)
		if err != nil {
			t.Fatal(err)
		}
		payload := 100
		if i%every == every-1 {
			payload = 1200 // past B's MTU
			long++
		} else {
			short++
		}
		fill(t, b, &f, uint32(i), payload)
		if err := tx.Xmit(b, i%64 != 63 && i != n-1); err != nil {
			t.Fatalf("xmit %d: %v", i, err)
		}
		if i%64 == 63 {
			seqs = append(seqs, receive(t, rx, short, time.Second, nil)...)
			short = 0
		}
	}
	seqs = append(seqs, receive(t, rx, short, time.Second, nil)...)
	want := 0
	for i := range n {
		if i%every == every-1 {
			continue
		}
		if want >= len(seqs) || seqs[want] != uint32(i) {
			t.Fatalf("short frame %d missing or out of place: received %v", i, seqs)
		}
		want++
	}
	if len(seqs) != want {
		t.Fatalf("received %d frames, want %d", len(seqs), want)
	}
	st := tx.Stats()
	xs, err := tx.XDPStats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kicks %d, EBUSY %d, tx_packets %d, tx_dropped_kernel %d", xs.Kicks, xs.KickBusy, st.TxPackets, st.TxDropped[netdev.DropKernel])
	if xs.KickBusy != uint64(long) || st.TxDropped[netdev.DropKernel] != uint64(long) || st.TxPackets != uint64(n-long) {
		t.Errorf("%d frames dropped by the peer: EBUSY %d times, tx_dropped_kernel %d, tx_packets %d (want %d)",
			long, xs.KickBusy, st.TxDropped[netdev.DropKernel], st.TxPackets, n-long)
	}
}

// TestSharedPool gives both devices one pool with a contiguous class: each
// registers the same arena as its UMEM, so a frame B received is a frame A
// can send from where it lies.
func TestSharedPool(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	p, err := pool.New(pool.Config{
		Classes:  []pool.Class{{Size: 2048, Max: 8192, Contiguous: true}},
		Headroom: XDPHeadroom,
		Name:     t.Name(),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Config: netdev.Config{Pool: p}}
	a := openOn(t, &l.A, Config{Config: cfg.Config, TxOnly: true})
	b := openOn(t, &l.B, cfg)
	f := frameTo(&l.A, &l.B)
	const n = 64
	xmitFilled(t, a, &f, n)
	// B hands each frame it receives to A, which sends it to B again.
	got := 0
	deadline := time.Now().Add(2 * time.Second)
	for got < n && time.Now().Before(deadline) {
		b.Wait(10 * time.Millisecond)
		b.Poll(n-got, func(buf *skb.Buff) {
			got++
			if err := a.Xmit(buf, true); err != nil {
				t.Errorf("xmit: %v", err)
			}
		})
		a.Flush()
	}
	wantInOrder(t, receive(t, b, n, 2*time.Second, nil), n)
	if xs, _ := a.XDPStats(); xs.TxCopied != 0 {
		t.Errorf("A copied %d frames of the shared pool, want none", xs.TxCopied)
	}
	for _, d := range []*Device{a, b} {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("pool: %v", err)
	}
}

// TestTxBudget raises the copy-mode budget of one doorbell system call
// (XDP_MAX_TX_SKB_BUDGET, Linux 6.17): a batch of 64 then takes one kick
// instead of two.
func TestTxBudget(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	var tx *Device
	err := l.A.Do(func() (err error) { tx, err = Open(l.A.Ifname, 0, Config{TxOnly: true, TxBudget: 64}); return err })
	if errors.Is(err, unix.ENOPROTOOPT) {
		t.Skipf("kernel without XDP_MAX_TX_SKB_BUDGET: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	rx := openOn(t, &l.B, Config{})
	f := frameTo(&l.A, &l.B)
	const rounds = 4
	for r := range rounds {
		for i := range 64 {
			b, err := tx.Alloc(0)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, b, &f, uint32(r*64+i), 18)
			if err := tx.Xmit(b, i != 63); err != nil {
				t.Fatal(err)
			}
		}
		seqs := receive(t, rx, 64, time.Second, nil)
		if len(seqs) != 64 || seqs[0] != uint32(r*64) || seqs[63] != uint32(r*64+63) {
			t.Fatalf("round %d: received %v", r, seqs)
		}
	}
	xs, _ := tx.XDPStats()
	if xs.Kicks != rounds {
		t.Errorf("%d batches of 64 took %d kicks, want one each", rounds, xs.Kicks)
	}
}

func TestXmitRejects(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	tx := openOn(t, &l.A, Config{TxOnly: true})
	short, _ := tx.Alloc(0)
	short.Put(10)
	if err := tx.Xmit(short, false); !errors.Is(err, ErrShortFrame) {
		t.Errorf("10-byte frame: %v, want ErrShortFrame", err)
	}
	long, _ := tx.Alloc(0)
	long.Put(tx.MTU() + 19)
	if err := tx.Xmit(long, false); !errors.Is(err, netdev.ErrTooBig) {
		t.Errorf("frame of MTU+19 bytes: %v, want ErrTooBig", err)
	}
	st := tx.Stats()
	if st.TxDropped[netdev.DropMalformed] != 1 || st.TxDropped[netdev.DropTooBig] != 1 || st.TxPackets != 0 {
		t.Errorf("counters %+v", st)
	}
}

func TestClosed(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	d := openOn(t, &l.B, Config{})
	other, err := pool.New(pool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := other.Close(); err != nil {
			t.Errorf("Xmit after Close did not free the buffer: %v", err)
		}
	}()
	b, err := other.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"xmit":  d.Xmit(b, false),
		"flush": d.Flush(),
		"wait":  d.Wait(time.Millisecond),
		"close": d.Close(),
	} {
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s after close: %v, want net.ErrClosed", name, err)
		}
	}
	if _, err := d.Poll(64, func(*skb.Buff) {}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("poll after close: %v", err)
	}
	if d.TxAvail() != 0 {
		t.Errorf("tx avail %d after close", d.TxAvail())
	}
}

// TestCloseWithBufferHeld checks that Close reports a buffer of the
// device's own pool that the application still holds.
func TestCloseWithBufferHeld(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	d := openOn(t, &l.B, Config{})
	b, err := d.Alloc(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); !errors.Is(err, pool.ErrLeak) {
		t.Errorf("close with a buffer of the device's pool held: %v, want pool.ErrLeak", err)
	}
	b.Free()
}

// TestWaitHonoursClose closes the device from another goroutine while Wait
// blocks, for each policy (and WaitSleep with a Sleep of 3 s, which Wait
// sleeps in slices), and checks Wait's timeout, and that Close returns
// soon, with the device down.
func TestWaitHonoursClose(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	for _, c := range []Config{{Wait: WaitSleep}, {Wait: WaitSpin}, {Wait: WaitPoll}, {Wait: WaitSleep, Sleep: 3 * time.Second}} {
		name := c.Wait.String()
		if c.Sleep != 0 {
			name += fmt.Sprintf(",sleep=%v", c.Sleep)
		}
		t.Run(name, func(t *testing.T) {
			d := openOn(t, &l.B, c)
			start := time.Now()
			if err := d.Wait(30 * time.Millisecond); !errors.Is(err, netdev.ErrTimeout) {
				t.Errorf("wait on an idle link: %v, want ErrTimeout", err)
			}
			if el := time.Since(start); el < 30*time.Millisecond || el > time.Second {
				t.Errorf("wait of 30ms took %v", el)
			}
			done := make(chan error, 1)
			go func() { done <- d.Wait(-1) }()
			time.Sleep(20 * time.Millisecond)
			var wg sync.WaitGroup
			wg.Add(1)
			var took time.Duration
			go func() {
				defer wg.Done()
				t0 := time.Now()
				if err := d.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
				took = time.Since(t0)
			}()
			select {
			case err := <-done:
				if !errors.Is(err, netdev.ErrClosed) || !strings.Contains(err.Error(), d.Ifname()) {
					t.Errorf("wait: %v, want ErrClosed naming %s", err, d.Ifname())
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("Wait still blocked 2s after Close")
			}
			wg.Wait()
			// Close waits up to a second for Wait to leave, then returns
			// with the device still up.
			if took > 500*time.Millisecond {
				t.Errorf("Close took %v with Wait sleeping", took)
			}
			if xdpAttached(t, &l.B) {
				t.Errorf("a program stays attached after Close")
			}
		})
	}
}

// TestZeroAllocs checks that steady-state transmit, completion, receive and
// refill allocate nothing on the Go heap.
func TestZeroAllocs(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	tx := openOn(t, &l.A, Config{TxOnly: true})
	rx := openOn(t, &l.B, Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}})
	f := frameTo(&l.A, &l.B)
	tmpl := make([]byte, f.HeaderLen()+64)
	if _, err := header.BuildUDP(tmpl, &f); err != nil {
		t.Fatal(err)
	}
	c := rx.Cache()
	got := 0
	h := func(b *skb.Buff) { got++; c.Free(b) }
	round := func() {
		for i := range 32 {
			b, err := tx.Alloc(0)
			if err != nil {
				t.Fatal(err)
			}
			copy(b.Put(len(tmpl)), tmpl)
			tx.Xmit(b, i != 31)
		}
		for range 100 {
			if n, _ := rx.Poll(64, h); n == 0 {
				break
			}
		}
	}
	round()
	if a := testing.AllocsPerRun(50, round); a != 0 {
		t.Errorf("%v allocations per round of 32 frames", a)
	}
	if got == 0 {
		t.Errorf("no frame received")
	}
}

// BenchmarkXmit measures transmit only from A, one doorbell per frame
// against one per 64. Nothing listens in B: its kernel takes each datagram
// up to UDP and drops it (no socket; the port-unreachable replies are rate
// limited), as for the C reference xsk_tx, whose frames also carry no UDP
// checksum (the sequence number written into each frame would break one).
func BenchmarkXmit(b *testing.B) {
	l := labtest.New(b, lab.Options{})
	tx := openOn(b, &l.A, Config{TxOnly: true})
	f := frameTo(&l.A, &l.B)
	f.NoChecksum = true
	for _, burst := range []int{1, 64} {
		for _, size := range []int{64, 512, 1500} {
			b.Run(fmt.Sprintf("burst=%d/frame=%d", burst, size), func(b *testing.B) {
				payload := size - f.HeaderLen()
				tmpl := make([]byte, size)
				if _, err := header.BuildUDP(tmpl, &f); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.SetBytes(int64(size))
				st0 := tx.Stats()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					buf, err := tx.Alloc(size)
					if err != nil {
						tx.Flush()
						continue
					}
					p := buf.Put(size)
					copy(p, tmpl)
					binary.BigEndian.PutUint32(p[size-payload:], uint32(i))
					tx.Xmit(buf, (i+1)%burst != 0 && i != b.N-1)
				}
				tx.Flush()
				el := time.Since(start)
				st := tx.Stats().Sub(st0)
				b.ReportMetric(float64(st.TxPackets)/el.Seconds(), "pps")
				b.ReportMetric(float64(st.TxDroppedTotal()), "dropped")
			})
		}
	}
}

// TestCloseDuringRunOnThread closes a device from another goroutine while
// its goroutine waits in it on a thread with a private descriptor table
// (netdev.RunOnThread): the device releases on that thread, and must still
// detach its program and free the queue in the process's table, so that
// the queue can be bound again once RunOnThread has returned.
func TestCloseDuringRunOnThread(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	d := openOn(t, &l.B, Config{})
	if !netdevtest.CloseDuringRunOnThread(t, d) {
		t.Skip("the kernel refused a private descriptor table here (seccomp?)")
	}
	if xdpAttached(t, &l.B) {
		t.Errorf("a program stays attached after Close and RunOnThread returned")
	}
	openOn(t, &l.B, Config{}) // the queue is free again
}

// TestAttachTaken checks Open on an interface where another program's XDP
// program is attached (as another process's AF_XDP sockets would hold it):
// one line that says so, and nothing left attached of skb's.
func TestAttachTaken(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	var other link.Link
	err := l.B.Do(func() error {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Type:         ebpf.XDP,
			AttachType:   ebpf.AttachXDP,
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // XDP_PASS
			License:      "GPL",
		})
		if err != nil {
			return err
		}
		defer prog.Close()
		other, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: l.B.Ifindex})
		return err
	})
	if err != nil {
		t.Fatalf("attach another program: %v", err)
	}
	defer other.Close()
	var d *Device
	err = l.B.Do(func() (err error) { d, err = Open(l.B.Ifname, 0, Config{}); return err })
	if err == nil {
		d.Close()
		t.Fatal("Open succeeded on an interface whose XDP hook is taken")
	}
	t.Logf("Open: %v", err)
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "an XDP program is attached to the interface already") {
		t.Errorf("Open: %q, want one line that says the hook is taken", msg)
	}
}

// TestWaitInterfaceRemoved removes the interface under a Wait without a
// timeout, for each policy: it returns ENETDOWN within a second (the
// socket's pending error, which wakes no poll(2)), and a spinning Poll
// returns it too.
func TestWaitInterfaceRemoved(t *testing.T) {
	for _, w := range []WaitPolicy{WaitSleep, WaitSpin, WaitPoll} {
		t.Run(w.String(), func(t *testing.T) {
			l := labtest.New(t, lab.Options{})
			d := openOn(t, &l.B, Config{Wait: w})
			done := make(chan error, 1)
			go func() { done <- d.Wait(-1) }()
			time.Sleep(50 * time.Millisecond)
			if out, err := l.B.Cmd("ip", "link", "del", l.B.Ifname).CombinedOutput(); err != nil {
				t.Fatalf("ip link del: %v: %s", err, out)
			}
			select {
			case err := <-done:
				if !errors.Is(err, unix.ENETDOWN) {
					t.Errorf("Wait(-1) after the interface was removed: %v, want ENETDOWN", err)
				}
			case <-time.After(2 * time.Second):
				d.Close()
				<-done
				t.Fatal("Wait(-1) had not returned 2 s after the interface was removed")
			}
		})
	}
}

// TestQueueBeyond64 opens queue 0 and then queue 70 of one interface in
// one process: the XSKMAP the first made is shared, and holds the second.
func TestQueueBeyond64(t *testing.T) {
	l := labtest.New(t, lab.Options{Queues: 80})
	openOn(t, &l.B, Config{})
	var d *Device
	if err := l.B.Do(func() (err error) { d, err = Open(l.B.Ifname, 70, Config{}); return err }); err != nil {
		t.Fatalf("queue 70 after queue 0: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRxRingCountedAtClose closes a receiver with frames waiting in its rx
// ring that no Poll took: they count as rx_dropped_closed.
func TestRxRingCountedAtClose(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	a := openOn(t, &l.A, Config{TxOnly: true})
	b := openOn(t, &l.B, Config{})
	f := frameTo(&l.A, &l.B)
	xmitFilled(t, a, &f, 100)
	if err := b.Wait(time.Second); err != nil {
		t.Fatal(err)
	}
	// The rest of the hundred, in the rx ring.
	for deadline := time.Now().Add(5 * time.Second); b.sock.RX.Pending() < 100 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	if got := st.RxPackets + st.RxDroppedTotal(); got != 100 || st.RxDropped[netdev.DropClosed] == 0 {
		t.Errorf("100 frames sent: rx_packets %d + rx_dropped %d (closed %d)", st.RxPackets, st.RxDroppedTotal(), st.RxDropped[netdev.DropClosed])
	}
}
