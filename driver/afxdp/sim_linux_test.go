package afxdp

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/internal/xsk"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// simKernel is a Device whose rings are an xsk.Sim, with the test playing
// the kernel's receive side: no socket, no device, no privilege.
type simKernel struct {
	d     *Device
	k     *xsk.Sim
	addrs []uint64
	descs []unix.XDPDesc
	// evict, when set, is memory the simulated kernel writes evictPer
	// bytes of per frame, cycling, as the kernel's own work between two
	// polls (socket buffers, page-pool pages, the sender's frames on the
	// other hyperthread) pushes the receiver's lines out of the caches.
	evict []byte
	epos  int
}

// evictPer is how many bytes of other memory the simulated kernel writes
// per frame when evicting, and evictSize the memory it cycles through
// (larger than a second-level cache).
const (
	evictPer  = 1024
	evictSize = 8 << 20
)

// simDevice opens a Device over simulated rings, with the pools and frame
// tables Open makes and the fill ring populated; the test closes it.
func simDevice(tb testing.TB, cfg Config) *simKernel {
	tb.Helper()
	c, err := cfg.resolved()
	if err != nil {
		tb.Fatal(err)
	}
	d := &Device{ifname: "sim0", mtu: 1500, cfg: c, wakeFD: -1, downDone: make(chan struct{})}
	if err := d.setupMem(); err != nil {
		d.teardown()
		tb.Fatal(err)
	}
	rs := uint32(c.RingSize)
	s, k := xsk.NewSim(rs, rs, rs, rs)
	d.sock = s
	d.refill()
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Error(err)
		}
	})
	return &simKernel{d: d, k: k, addrs: make([]uint64, rs), descs: make([]unix.XDPDesc, rs)}
}

// receive plays the kernel receiving up to n copies of frame, as copy mode
// does: it takes frames from the fill ring in the order they were posted,
// writes frame behind the headroom with seq+i in its last four bytes, and
// produces their rx descriptors. It returns how many it received.
func (s *simKernel) receive(frame []byte, n int, seq uint32) int {
	n = s.k.TakeFill(s.addrs[:min(n, len(s.addrs))])
	mem := s.d.umem.Bytes()
	for i, a := range s.addrs[:n] {
		if s.evict != nil {
			clear(s.evict[s.epos : s.epos+evictPer])
			if s.epos += evictPer; s.epos == len(s.evict) {
				s.epos = 0
			}
		}
		at := a&^uint64(s.d.frameSize-1) + uint64(s.d.rxOff)
		p := mem[at : at+uint64(len(frame))]
		copy(p, frame)
		binary.BigEndian.PutUint32(p[len(p)-4:], seq+uint32(i))
		s.descs[i] = unix.XDPDesc{Addr: at, Len: uint32(len(frame))}
	}
	return s.k.PutRx(s.descs[:n])
}

// simFrame returns a 64-byte-payload UDP frame of the lab's addresses.
func simFrame(tb testing.TB) []byte {
	f := header.UDPFrame{
		SourceIP: netip.MustParseAddr("198.18.0.1"), DestinationIP: netip.MustParseAddr("198.18.0.2"),
		SourcePort: 12345, DestinationPort: testPort, NoChecksum: true,
	}
	copy(f.Source[:], []byte{2, 0, 0xc6, 0x12, 0, 1})
	copy(f.Destination[:], []byte{2, 0, 0xc6, 0x12, 0, 2})
	frame := make([]byte, f.HeaderLen()+64)
	if _, err := header.BuildUDP(frame, &f); err != nil {
		tb.Fatal(err)
	}
	return frame
}

// TestSimReceive checks the receive path on simulated rings: frames come up
// in order with their metadata, the fill ring is kept full with fresh
// frames, and a descriptor for a frame the driver never posted is dropped
// and counted.
func TestSimReceive(t *testing.T) {
	s := simDevice(t, Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}, RingSize: 64, Frames: 128})
	d := s.d
	frame := simFrame(t)
	var next uint32
	for round := range 10 {
		n := s.receive(frame, 48, next)
		if n != 48 {
			t.Fatalf("round %d: kernel took %d frames from the fill ring, want 48", round, n)
		}
		got, err := d.Poll(PollBudget, func(b *skb.Buff) {
			data := b.Data()
			if len(data) != len(frame) || b.Protocol() != 0x0800 || !b.MacHeaderWasSet() || len(b.MacHeader()) != len(data) || b.QueueMapping() != 0 {
				t.Errorf("frame %d: %d bytes, protocol %#x, mac header set %v", next, len(data), b.Protocol(), b.MacHeaderWasSet())
			}
			if seq := binary.BigEndian.Uint32(data[len(data)-4:]); seq != next {
				t.Errorf("frame %d came up as %d", next, seq)
			}
			next++
			d.Cache().Free(b)
		})
		if err != nil || got != n {
			t.Fatalf("round %d: poll %d, %v; want %d", round, got, err, n)
		}
		if p := d.sock.Fill.Pending(); p != 64 {
			t.Fatalf("round %d: %d frames on the fill ring after the poll, want 64", round, p)
		}
	}
	// A descriptor outside the UMEM and one for a frame of the UMEM the
	// driver never posted: both dropped and counted, nothing handed up.
	unposted := -1
	for i, b := range d.rxBufs {
		if b == nil {
			unposted = i
			break
		}
	}
	if unposted < 0 {
		t.Fatal("every frame is posted")
	}
	bad := []unix.XDPDesc{
		{Addr: uint64(len(d.umem.Bytes())) + 256, Len: 60},
		{Addr: uint64(unposted)<<d.shift + uint64(d.rxOff), Len: 60},
	}
	s.k.PutRx(bad)
	if n, err := d.Poll(PollBudget, func(b *skb.Buff) { t.Error("malformed descriptor handed up"); d.Cache().Free(b) }); n != 0 || err != nil {
		t.Fatalf("poll of malformed descriptors: %d, %v", n, err)
	}
	// A frame received as the kernel does it still comes up after them.
	if s.receive(frame, 1, next) != 1 {
		t.Fatal("no frame on the fill ring")
	}
	if n, _ := d.Poll(PollBudget, func(b *skb.Buff) { d.Cache().Free(b) }); n != 1 {
		t.Fatalf("poll after the malformed descriptors: %d frames, want 1", n)
	}
	st := d.Stats()
	if st.RxPackets != 481 || st.RxDropped[netdev.DropMalformed] != 2 {
		t.Errorf("rx_packets %d, rx_dropped_malformed %d; want 481, 2", st.RxPackets, st.RxDropped[netdev.DropMalformed])
	}
}

// TestSimZeroAllocs checks that receiving a batch on simulated rings
// allocates nothing.
func TestSimZeroAllocs(t *testing.T) {
	s := simDevice(t, Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}})
	frame := simFrame(t)
	free := func(b *skb.Buff) { s.d.Cache().Free(b) }
	if n := testing.AllocsPerRun(100, func() {
		s.receive(frame, 64, 0)
		if got, err := s.d.Poll(PollBudget, free); got != 64 || err != nil {
			t.Fatalf("poll: %d, %v; want 64 frames", got, err)
		}
	}); n != 0 {
		t.Errorf("%.1f allocations per batch of 64 frames", n)
	}
}

// BenchmarkPollSim measures the receive path per frame, without the
// kernel: the simulated kernel writes batches of 64-byte-payload frames
// into the frames posted on a 2048-entry fill ring (so the buffers cycle as
// on a real ring), and Poll hands each to a handler that reads its last
// payload word, as C's xsk_rx does, and frees it (106-byte frames, the
// lab's: 64 bytes of UDP payload). ns/op is per frame,
// including the simulated kernel's copy. The evict variants also write
// 1 KiB of other memory per frame (evictPer), so that what the receive path
// touches is no longer in the caches, as on a real receiver; "bare" drives
// the rings as C does, with no buffers: the floor.
func BenchmarkPollSim(b *testing.B) {
	for _, v := range []struct {
		batch int
		evict bool
	}{{16, false}, {64, false}, {256, false}, {64, true}} {
		name := "batch=" + strconv.Itoa(v.batch)
		if v.evict {
			name += "/evict"
		}
		batch := v.batch
		b.Run(name, func(b *testing.B) {
			s := simDevice(b, Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}})
			if v.evict {
				s.evict = make([]byte, evictSize)
			}
			frame := simFrame(b)
			var sum uint32
			h := func(x *skb.Buff) {
				p := x.Data()
				sum += binary.BigEndian.Uint32(p[len(p)-4:])
				s.d.Cache().Free(x)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				s.receive(frame, batch, uint32(i))
				if _, err := s.d.Poll(PollBudget, h); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
			if sum == 1 {
				b.Log(sum)
			}
		})
	}
	for _, evict := range []bool{false, true} {
		name := "bare"
		if evict {
			name += "/evict"
		}
		b.Run(name, func(b *testing.B) { benchBare(b, evict) })
	}
}

// benchBare is BenchmarkPollSim's floor: the rings driven as C's xsk_rx
// drives them, each descriptor's frame address straight back to the fill
// ring, no buffer.
func benchBare(b *testing.B, evict bool) {
	s := simDevice(b, Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}})
	if evict {
		s.evict = make([]byte, evictSize)
	}
	frame := simFrame(b)
	mem := s.d.umem.Bytes()
	rx, fq := &s.d.sock.RX, &s.d.sock.Fill
	mask := ^uint64(s.d.frameSize - 1)
	var sum uint32
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		s.receive(frame, 64, uint32(i))
		n := rx.Peek(PollBudget)
		room := fq.Free(n)
		for k := range room {
			desc := rx.Descs[rx.Index(k)]
			sum += binary.BigEndian.Uint32(mem[desc.Addr+uint64(desc.Len)-4:])
			fq.Addrs[fq.Index(k)] = desc.Addr & mask
		}
		rx.Consume(room)
		rx.Release()
		fq.Produce(room)
		fq.Submit()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
	if sum == 1 {
		b.Log(sum)
	}
}

// TestSimHandlerPanicWait has the handler panic at the fourth of eight
// frames, the caller recover, Wait (which refills the fill ring with the
// frames already freed) and Poll again: the frames after the panic are
// handed over once, none twice, and no buffer handed over is also posted
// on the fill ring (where the kernel could write it under its owner).
func TestSimHandlerPanicWait(t *testing.T) {
	s := simDevice(t, Config{Config: netdev.Config{Copybreak: netdev.CopybreakOff}, RingSize: 64, Frames: 128})
	d := s.d
	if n := s.receive(simFrame(t), 8, 0); n != 8 {
		t.Fatal(n)
	}
	seq := func(b *skb.Buff) uint32 { p := b.Data(); return binary.BigEndian.Uint32(p[len(p)-4:]) }
	var seqs []uint32
	var dropped *skb.Buff // the buffer the panicking handler owned
	func() {
		defer func() { recover() }()
		d.Poll(64, func(b *skb.Buff) {
			seqs = append(seqs, seq(b))
			if len(seqs) == 4 {
				dropped = b
				panic("a handler's bug")
			}
			d.Cache().Free(b)
		})
	}()
	d.Cache().Free(dropped)
	d.Wait(0)
	var held []*skb.Buff
	d.Poll(64, func(b *skb.Buff) {
		seqs = append(seqs, seq(b))
		held = append(held, b)
	})
	if want := []uint32{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(seqs, want) {
		t.Errorf("handed over %v, want %v", seqs, want)
	}
	fq := &d.sock.Fill
	posted := map[uint64]bool{}
	for i := fq.Consumer(); i != fq.Producer(); i++ {
		posted[fq.Addrs[i&(fq.Size()-1)]>>d.shift] = true
	}
	for _, b := range held {
		if posted[b.HeadAddr()>>d.shift] {
			t.Errorf("buffer of frame %d handed over and posted on the fill ring", seq(b))
		}
		d.Cache().Free(b)
	}
	if st := d.Stats(); st.RxPackets != 8 || st.RxDroppedTotal() != 0 {
		t.Errorf("rx_packets %d, rx_dropped %d; want 8 and 0", st.RxPackets, st.RxDroppedTotal())
	}
}

// TestSimTxTakenCountedAtClose queues ten frames on a device bound with
// need_wakeup whose tx ring says no wakeup is needed (a NIC that transmits
// on its own): the doorbell neither kicks nor counts, and the device takes
// the frames after it. Close counts them as sent: every frame given to
// Xmit ends in tx_packets or tx_dropped.
func TestSimTxTakenCountedAtClose(t *testing.T) {
	s := simDevice(t, Config{RingSize: 64, Frames: 128})
	d := s.d
	d.needWakeup = true
	frame := simFrame(t)
	const n = 10
	for i := range n {
		b, err := d.Alloc(0)
		if err != nil {
			t.Fatal(err)
		}
		copy(b.Put(len(frame)), frame)
		if err := d.Xmit(b, i != n-1); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.k.TakeTx(); got != n {
		t.Fatalf("the device took %d of %d", got, n)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.TxPackets != n || st.TxDroppedTotal() != 0 {
		t.Errorf("tx_packets %d, tx_dropped %d; want %d and 0", st.TxPackets, st.TxDroppedTotal(), n)
	}
}
