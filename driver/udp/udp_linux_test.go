//go:build linux

package udp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/icmptest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// families are the loopback addresses the tests run on.
var families = []struct {
	name string
	addr netip.AddrPort
}{{"ipv4", lo4}, {"ipv6", lo6}}

// TestTransfer sends datagrams of several sizes in bursts and checks that
// each arrives once, in order and intact, with the counters adding up, for
// every combination of family, GSO and GRO.
func TestTransfer(t *testing.T) {
	for _, fam := range families {
		for _, gso := range []bool{false, true} {
			for _, gro := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/gso=%v/gro=%v", fam.name, gso, gro), func(t *testing.T) {
					testTransfer(t, fam.addr, gso, gro)
				})
			}
		}
	}
}

func testTransfer(t *testing.T, local netip.AddrPort, gso, gro bool) {
	tx, rx := pair(t, local, Config{GSO: gso}, Config{GRO: gro, RcvBuf: 4 << 20})
	if tx.GSO() != gso || rx.GRO() != gro {
		t.Fatalf("offloads: GSO %v GRO %v, want %v %v", tx.GSO(), rx.GRO(), gso, gro)
	}
	// Runs of equal sizes (GSO coalesces them), a shorter last one, sizes
	// on both sides of the copybreak threshold, and single datagrams.
	sizes := []int{64, 64, 64, 1000, 1000, 1000, 700, 1472, 4, 255, 256, 1400, 1400, 1400, 1400, 100}
	const bursts = 20
	seq := uint32(0)
	want := map[uint32]int{}
	var order []uint32
	for range bursts {
		for i, n := range sizes {
			want[seq] = n
			order = append(order, seq)
			if err := tx.Xmit(fill(t, tx, seq, n), i < len(sizes)-1); err != nil {
				t.Fatal(err)
			}
			seq++
		}
	}
	g := collect(t, rx, len(order), 5*time.Second)
	if len(g) != len(order) {
		t.Fatalf("received %d of %d datagrams; tx %+v rx %+v", len(g), len(order), tx.Stats(), rx.Stats())
	}
	for i, p := range g {
		if p.bad || p.seq != order[i] || p.n != want[p.seq] {
			t.Fatalf("datagram %d: seq %d len %d bad %v, want seq %d len %d", i, p.seq, p.n, p.bad, order[i], want[order[i]])
		}
		// A clone of a GRO train's buffer has the segments before it in
		// its headroom.
		if p.head != netdev.DefaultHeadroom && !(gro && gso && p.head > netdev.DefaultHeadroom) {
			t.Fatalf("datagram %d: headroom %d, want %d", i, p.head, netdev.DefaultHeadroom)
		}
		if p.src != tx.LocalAddr() {
			t.Fatalf("datagram %d: source %v, want %v", i, p.src, tx.LocalAddr())
		}
	}
	total := 0
	small := 0
	for _, n := range sizes {
		total += n
		if n < netdev.DefaultCopybreak {
			small++
		}
	}
	ts, rs := tx.Stats(), rx.Stats()
	if ts.TxPackets != uint64(len(order)) || ts.TxBytes != uint64(total*bursts) || ts.TxDroppedTotal() != 0 {
		t.Errorf("tx counters %+v", ts)
	}
	if rs.RxPackets != uint64(len(order)) || rs.RxBytes != uint64(total*bursts) || rs.RxDroppedTotal() != 0 {
		t.Errorf("rx counters %+v", rs)
	}
	if !gro && rs.RxCopybreak != uint64(small*bursts) {
		t.Errorf("rx_copybreak %d, want %d", rs.RxCopybreak, small*bursts)
	}
	// One doorbell per burst, unless a short count needed another.
	if ts.TxDoorbells < bursts {
		t.Errorf("tx_doorbells %d for %d bursts", ts.TxDoorbells, bursts)
	}
}

// TestCopybreakInEffect checks the threshold Copybreak reports: Config's,
// lowered to what lands in a smaller class than the receive buffer.
func TestCopybreakInEffect(t *testing.T) {
	for _, tc := range []struct {
		copybreak, recv, want int
	}{
		{0, 0, netdev.DefaultCopybreak},
		{1000, 0, 385},              // a 512-byte block behind 128 of headroom
		{5000, MaxDatagram4, 1921},  // a 2048-byte block
		{netdev.CopybreakOff, 0, 0}, // off
		{0, 64, 0},                  // receive buffers of the smallest class
		{100, MaxDatagram4, 100},    // below every limit
	} {
		d, err := Open(Config{Config: netdev.Config{Copybreak: tc.copybreak}, Local: lo4, RecvSize: tc.recv})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Copybreak(); got != tc.want {
			t.Errorf("copybreak %d, receive size %d: Copybreak() = %d, want %d", tc.copybreak, tc.recv, got, tc.want)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestCopyClassWarm checks that Open maps the pool class copybreak copies
// come from (the first datagrams copied would otherwise wait on it), and
// that without copybreak it maps none; the first Poll, with nothing to
// receive, maps the receive buffers' class.
func TestCopyClassWarm(t *testing.T) {
	for _, cb := range []int{0, netdev.CopybreakOff} {
		p, err := pool.New(pool.Config{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := Open(Config{Config: netdev.Config{Pool: p, Copybreak: cb}, Local: lo4, RecvSize: MaxDatagram4})
		if err != nil {
			t.Fatal(err)
		}
		small := 0
		for _, c := range p.Stats().Classes {
			if c.Size == pool.SmallSize {
				small = c.Blocks
			}
		}
		if n, err := d.Poll(8, func(b *skb.Buff) { b.Free() }); n != 0 || err != nil {
			t.Fatalf("Poll on an empty socket: %d, %v", n, err)
		}
		recv := 0
		for _, c := range p.Stats().Classes {
			if c.Size-d.headroom >= MaxDatagram4 && recv == 0 {
				recv = c.Blocks
			}
		}
		if recv == 0 || (small > 0) != (cb == 0) {
			t.Errorf("copybreak %d: %d blocks of %d bytes (copies) after Open, %d receive blocks after the first Poll", cb, small, pool.SmallSize, recv)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestCopybreak checks the copybreak threshold, CopybreakOff and a headroom
// other than the pool's.
func TestCopybreak(t *testing.T) {
	for _, tc := range []struct {
		copybreak, headroom int
		size                int
		copied              bool
		recv                int // Config.RecvSize
	}{
		{0, 0, 100, true, 0},
		{0, 0, 255, true, 0},
		{0, 0, 256, false, 0},
		{netdev.CopybreakOff, 0, 10, false, 0},
		// Under the threshold, but a copy saves memory only into a
		// smaller class than the 2 KiB receive buffer: up to 384 bytes
		// behind 128 of headroom in a 512-byte block.
		{1000, 0, 384, true, 0},
		{1000, 0, 385, false, 0},
		{1000, 0, 999, false, 0},
		// Receive buffers of the smallest class already: never copied.
		{0, 0, 60, false, 64},
		{0, 200, 100, true, 0},
		{0, 200, 1200, false, 0},
		{0, 64, 100, true, 0},
		{0, 64, 1000, false, 0},
	} {
		t.Run(fmt.Sprintf("copybreak=%d/headroom=%d/size=%d/recv=%d", tc.copybreak, tc.headroom, tc.size, tc.recv), func(t *testing.T) {
			p, err := pool.New(pool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := p.Close(); err != nil {
					t.Error(err)
				}
			})
			rxc := Config{Config: netdev.Config{Pool: p, Copybreak: tc.copybreak, Headroom: tc.headroom}, RecvSize: tc.recv}
			tx, rx := pair(t, lo4, Config{}, rxc)
			// A first datagram and Poll post the receive buffers.
			if err := tx.Xmit(fill(t, tx, 100, tc.size), false); err != nil {
				t.Fatal(err)
			}
			if len(collect(t, rx, 1, 2*time.Second)) != 1 {
				t.Fatal("the first datagram did not arrive")
			}
			blocks := func() (n uint64) {
				for _, c := range p.Stats().Classes {
					if c.Size > pool.SmallSize {
						n += c.Allocs
					}
				}
				return n
			}
			b0, cb0 := blocks(), rx.Stats().RxCopybreak
			for i := range 10 {
				if err := tx.Xmit(fill(t, tx, uint32(i), tc.size), false); err != nil {
					t.Fatal(err)
				}
			}
			g := collect(t, rx, 10, 2*time.Second)
			if len(g) != 10 {
				t.Fatalf("got %d of 10", len(g))
			}
			// A datagram copied out leaves its receive buffer posted
			// (reused at once): no new receive buffer for it. Those
			// handed over as they came are replaced by new ones (as
			// the ring runs low: some, not one per datagram).
			if d := blocks() - b0; tc.copied && d != 0 || !tc.copied && tc.recv == 0 && d == 0 {
				t.Errorf("%d receive buffers allocated for 10 datagrams (copied %v); want none when copied, some when not", d, tc.copied)
			}
			hr := tc.headroom
			if hr == 0 {
				hr = netdev.DefaultHeadroom
			}
			for _, p := range g {
				if p.bad || p.n != tc.size || p.head != hr {
					t.Fatalf("datagram %+v, want %d bytes behind %d of headroom", p, tc.size, hr)
				}
			}
			want := uint64(0)
			if tc.copied {
				want = 10
			}
			if c := rx.Stats().RxCopybreak - cb0; c != want {
				t.Errorf("rx_copybreak %d, want %d", c, want)
			}
		})
	}
}

// TestGROTrain sends one GSO batch into a GRO socket and checks that the
// train is split into one buffer per datagram, across Poll calls with a
// small budget, as copies below the copybreak threshold and as clones of the
// train's buffer above it.
func TestGROTrain(t *testing.T) {
	for _, size := range []int{100, 1200} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			tx, rx := pair(t, lo4, Config{GSO: true}, Config{GRO: true})
			const n = 40
			for i := range n {
				sz := size
				if i == n-1 {
					sz = size / 2 // the last segment of a train may be shorter
				}
				if err := tx.Xmit(fill(t, tx, uint32(i), sz), i < n-1); err != nil {
					t.Fatal(err)
				}
			}
			if err := rx.Wait(time.Second); err != nil {
				t.Fatal(err)
			}
			var got []*skb.Buff
			polls := 0
			for len(got) < n && polls < 100 {
				if err := rx.Wait(100 * time.Millisecond); err != nil {
					t.Fatalf("wait after %d: %v", len(got), err)
				}
				k, err := rx.Poll(7, func(b *skb.Buff) { got = append(got, b) })
				if err != nil || k > 7 {
					t.Fatalf("poll: %d %v", k, err)
				}
				polls++
			}
			if len(got) != n {
				t.Fatalf("got %d of %d", len(got), n)
			}
			for i, b := range got {
				seq, ok := checkPattern(b.Data())
				want := size
				if i == n-1 {
					want = size / 2
				}
				if !ok || seq != uint32(i) || b.Len() != want {
					t.Errorf("datagram %d: seq %d len %d ok %v", i, seq, b.Len(), ok)
				}
				// Clones share the train's buffer, except the last, which
				// is the buffer itself (shared too until the others go).
				if shared := b.Dataref() > 1; shared != (size >= netdev.DefaultCopybreak) && i < n-1 {
					t.Errorf("datagram %d of %d bytes: dataref %d", i, size, b.Dataref())
				}
			}
			for _, b := range got {
				rx.Cache().Free(b)
			}
			st := rx.Stats()
			if st.RxPackets != n {
				t.Errorf("rx_packets %d", st.RxPackets)
			}
			if size < netdev.DefaultCopybreak && st.RxCopybreak != n {
				t.Errorf("rx_copybreak %d, want %d", st.RxCopybreak, n)
			}
		})
	}
}

// TestSuperPacket sends GSO super-packets (skb GSOSize set) with GSO on and
// off, more segments than one UDP_SEGMENT message takes, linear and paged.
func TestSuperPacket(t *testing.T) {
	for _, gso := range []bool{true, false} {
		for _, tc := range []struct {
			seg, segs, last int
			paged           bool
		}{
			{100, 10, 100, false},
			{1000, 8, 10, false},
			{64, 200, 64, false}, // more than MaxGSOSegments
			{300, 5, 7, true},
		} {
			t.Run(fmt.Sprintf("gso=%v/%dx%d+%d/paged=%v", gso, tc.segs, tc.seg, tc.last, tc.paged), func(t *testing.T) {
				tx, rx := pair(t, lo4, Config{GSO: gso}, Config{RcvBuf: 4 << 20})
				total := (tc.segs-1)*tc.seg + tc.last
				payload := make([]byte, total)
				for k := range tc.segs {
					end := min(total, (k+1)*tc.seg)
					pattern(payload[k*tc.seg:end], uint32(k))
				}
				b := build(t, tx, payload, tc.paged)
				b.SetGSO(tc.seg, tc.segs, skb.GSOUDPL4)
				if err := tx.Xmit(b, false); err != nil {
					t.Fatal(err)
				}
				g := collect(t, rx, tc.segs, 3*time.Second)
				if len(g) != tc.segs {
					t.Fatalf("got %d of %d datagrams; tx %+v", len(g), tc.segs, tx.Stats())
				}
				for k, p := range g {
					want := tc.seg
					if k == tc.segs-1 {
						want = tc.last
					}
					if p.bad || p.seq != uint32(k) || p.n != want {
						t.Fatalf("datagram %d: %+v, want %d bytes", k, p, want)
					}
				}
				if st := tx.Stats(); st.TxPackets != uint64(tc.segs) || st.TxBytes != uint64(total) {
					t.Errorf("tx_packets %d tx_bytes %d, want %d %d", st.TxPackets, st.TxBytes, tc.segs, total)
				}
			})
		}
	}
}

// build makes a buffer holding payload: linear, or with a short linear part,
// two page frags and a frag list member.
func build(t testing.TB, d *Device, payload []byte, paged bool) *skb.Buff {
	t.Helper()
	c := d.Cache()
	if !paged || len(payload) < 8 {
		b, err := c.Alloc(len(payload))
		if err != nil {
			t.Fatal(err)
		}
		copy(b.Put(len(payload)), payload)
		return b
	}
	q := len(payload) / 4
	b, err := c.Alloc(q)
	if err != nil {
		t.Fatal(err)
	}
	copy(b.Put(q), payload[:q])
	for _, part := range [][]byte{payload[q : 2*q], payload[2*q : 3*q]} {
		pg, off, err := c.AllocFrag(len(part))
		if err != nil {
			t.Fatal(err)
		}
		copy(pg.Bytes()[off:], part)
		b.AddRxFrag(pg, off, len(part))
	}
	m, err := c.Alloc(len(payload) - 3*q)
	if err != nil {
		t.Fatal(err)
	}
	copy(m.Put(len(payload)-3*q), payload[3*q:])
	b.AddFragList(m)
	if b.Len() != len(payload) || !b.IsNonlinear() {
		t.Fatalf("built %d bytes, nonlinear %v", b.Len(), b.IsNonlinear())
	}
	return b
}

// TestPaged sends nonlinear buffers (frags and a frag list), plainly and
// coalesced by GSO, and checks the bytes arrive in order.
func TestPaged(t *testing.T) {
	for _, gso := range []bool{false, true} {
		// 200 bytes: a GSO run this small is copied into the staging buffer.
		for _, size := range []int{800, 200} {
			t.Run(fmt.Sprintf("gso=%v/size=%d", gso, size), func(t *testing.T) {
				tx, rx := pair(t, lo6, Config{GSO: gso}, Config{})
				const n = 20
				for i := range n {
					p := make([]byte, size)
					pattern(p, uint32(i))
					if err := tx.Xmit(build(t, tx, p, i%2 == 0), i < n-1); err != nil {
						t.Fatal(err)
					}
				}
				g := collect(t, rx, n, 2*time.Second)
				if len(g) != n {
					t.Fatalf("got %d of %d", len(g), n)
				}
				for i, p := range g {
					if p.bad || p.seq != uint32(i) || p.n != size {
						t.Fatalf("datagram %d: %+v", i, p)
					}
				}
				if st := tx.Stats(); st.TxDoorbells != 1 {
					t.Errorf("%d doorbells for one burst", st.TxDoorbells)
				}
			})
		}
	}
}

// TestHeadless sends buffers whose linear part is empty and whose payload
// is all in one page frag (a headerless buffer, skbuff.h), alone and in a
// burst.
func TestHeadless(t *testing.T) {
	tx, rx := pair(t, lo4, Config{GSO: true}, Config{})
	for i := range 6 {
		c := tx.Cache()
		b, err := c.Alloc(0)
		if err != nil {
			t.Fatal(err)
		}
		pg, off, err := c.AllocFrag(300)
		if err != nil {
			t.Fatal(err)
		}
		pattern(pg.Bytes()[off:off+300], uint32(i))
		b.AddRxFrag(pg, off, 300)
		if err := tx.Xmit(b, i%3 == 1); err != nil {
			t.Fatal(err)
		}
	}
	g := collect(t, rx, 6, 2*time.Second)
	if len(g) != 6 {
		t.Fatalf("got %d of 6", len(g))
	}
	for i, p := range g {
		if p.bad || p.seq != uint32(i) || p.n != 300 {
			t.Fatalf("datagram %d: %+v", i, p)
		}
	}
}

// TestGSOFallbackEINVAL makes every UDP_SEGMENT send fail (SO_NO_CHECK on
// the sending socket, which the kernel refuses to segment with EINVAL) and
// checks that the batch still arrives, sent plainly, that GSO is off
// afterwards and that the reason is counted once.
func TestGSOFallbackEINVAL(t *testing.T) {
	tx, rx := pair(t, lo4, Config{GSO: true}, Config{RcvBuf: 1 << 20})
	if err := unix.SetsockoptInt(tx.Fd(), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1); err != nil {
		t.Fatal(err)
	}
	sendRun(t, tx, 0, 30, 500)
	g := collect(t, rx, 30, 2*time.Second)
	if len(g) != 30 || tx.GSO() {
		t.Fatalf("got %d of 30, GSO still %v", len(g), tx.GSO())
	}
	for i, p := range g {
		if p.bad || p.seq != uint32(i) {
			t.Fatalf("datagram %d: %+v", i, p)
		}
	}
	// A second batch goes plainly without another fallback.
	sendRun(t, tx, 30, 30, 500)
	if g := collect(t, rx, 30, 2*time.Second); len(g) != 30 {
		t.Fatalf("second batch: got %d of 30", len(g))
	}
	st := tx.Stats()
	if st.GSOFallback[netdev.FallbackEINVAL] != 1 || st.GSOFallbackTotal() != 1 {
		t.Errorf("gso_fallback %v", st.GSOFallback)
	}
	if st.TxPackets != 60 || st.TxDroppedTotal() != 0 {
		t.Errorf("tx counters %+v", st)
	}
}

// sendRun queues n datagrams of size bytes, seq from first, as one batch.
func sendRun(t testing.TB, d *Device, first uint32, n, size int) {
	t.Helper()
	for i := range n {
		if err := d.Xmit(fill(t, d, first+uint32(i), size), i < n-1); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTruncated sends datagrams longer than the receive buffer between
// shorter ones: they are counted and dropped, the others arrive.
func TestTruncated(t *testing.T) {
	for _, busy := range []time.Duration{0, 20 * time.Microsecond} {
		t.Run(fmt.Sprint(busy), func(t *testing.T) {
			tx, rx := pair(t, lo4, Config{}, Config{RecvSize: 600, BusyPoll: busy})
			for i, n := range []int{100, 601, 600, 3000, 500} {
				if err := tx.Xmit(fill(t, tx, uint32(i), n), false); err != nil {
					t.Fatal(err)
				}
			}
			g := collect(t, rx, 3, 2*time.Second)
			if len(g) != 3 || g[0].seq != 0 || g[1].seq != 2 || g[2].seq != 4 || g[1].n != 600 {
				t.Fatalf("got %+v", g)
			}
			st := rx.Stats()
			if st.RxTruncated != 2 || st.RxDropped[netdev.DropTruncated] != 2 || st.RxPackets != 3 {
				t.Errorf("rx counters %+v", st)
			}
		})
	}
}

// TestBusyPollTruncated has BusyPoll find a datagram too long for the
// receive buffer (dropped, rx_truncated) before a short one comes: the
// spin goes on and hands over the short one, rather than returning
// (0, nil) as if its timeout had passed. For the plain, GRO and PktInfo
// receive paths.
func TestBusyPollTruncated(t *testing.T) {
	for _, c := range []Config{{}, {GRO: true}, {PktInfo: true}} {
		t.Run(fmt.Sprintf("gro=%v,pktinfo=%v", c.GRO, c.PktInfo), func(t *testing.T) {
			c.RecvSize = 600
			tx, rx := pair(t, lo4, Config{}, c)
			if err := tx.Xmit(fill(t, tx, 1, 1000), false); err != nil {
				t.Fatal(err)
			}
			sent := make(chan error, 1)
			go func() {
				time.Sleep(20 * time.Millisecond)
				sent <- tx.Xmit(fill(t, tx, 2, 100), false)
			}()
			var got []uint32
			h := func(b *skb.Buff) {
				got = append(got, binary.BigEndian.Uint32(b.Data()))
				rx.Cache().Free(b)
			}
			n, err := rx.BusyPoll(8, h, 5*time.Second)
			if serr := <-sent; serr != nil {
				t.Fatal(serr)
			}
			if n != 1 || err != nil || len(got) != 1 || got[0] != 2 {
				t.Errorf("BusyPoll with a truncated datagram, then a short one 20 ms later: %d, %v, got seqs %v; want 1, nil, [2]", n, err, got)
			}
			if st := rx.Stats(); st.RxTruncated != 1 {
				t.Errorf("rx_truncated %d, want 1", st.RxTruncated)
			}
		})
	}
}

// TestKernelDrops overflows a small receive buffer and checks that what
// arrives plus what the kernel reports dropped (rx_dropped_kernel, read with
// SO_MEMINFO) is what was sent.
func TestKernelDrops(t *testing.T) {
	for _, busy := range []time.Duration{0, 20 * time.Microsecond} {
		t.Run(fmt.Sprint(busy), func(t *testing.T) { testKernelDrops(t, busy) })
	}
}

func testKernelDrops(t *testing.T, busy time.Duration) {
	tx, rx := pair(t, lo4, Config{}, Config{RcvBuf: 4096, BusyPoll: busy})
	const n = 300
	for i := range n {
		if err := tx.Xmit(fill(t, tx, uint32(i), 200), i%32 != 31); err != nil {
			t.Fatal(err)
		}
	}
	got := len(collect(t, rx, n, 100*time.Millisecond))
	// Send markers until one gets through: the queue has room again, and
	// every datagram sent before it has been queued or dropped.
	markers := 0
	for arrived := false; !arrived && markers < 20; {
		if err := tx.Xmit(fill(t, tx, uint32(n+markers), 200), false); err != nil {
			t.Fatal(err)
		}
		markers++
		for _, p := range collect(t, rx, n, 100*time.Millisecond) {
			got++
			arrived = arrived || p.seq >= n
		}
	}
	st := rx.Stats()
	if got == n+markers {
		t.Fatalf("no datagram was dropped: receive buffer too large")
	}
	if uint64(got)+st.RxDropped[netdev.DropKernel] != uint64(n+markers) {
		t.Errorf("received %d + kernel drops %d != sent %d", got, st.RxDropped[netdev.DropKernel], n+markers)
	}
	// The socket's own count (/proc/net/udp's drops column) agrees.
	if drops := procDrops(t, rx.LocalAddr()); drops != st.RxDropped[netdev.DropKernel] {
		t.Errorf("rx_dropped_kernel %d, /proc/net/udp says %d", st.RxDropped[netdev.DropKernel], drops)
	}
	t.Logf("received %d, kernel dropped %d", got, st.RxDropped[netdev.DropKernel])
}

// procDrops returns the drops column of /proc/net/udp for the IPv4 socket
// bound to local.
func procDrops(t testing.TB, local netip.AddrPort) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		t.Fatal(err)
	}
	a := local.Addr().As4()
	want := fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(a[:]), local.Port())
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 13 && f[1] == want {
			n, err := strconv.ParseUint(f[len(f)-1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no socket %s in /proc/net/udp", want)
	return 0
}

// TestUnconnected sends from an unconnected device to three receivers, with
// SetDst and XmitTo interleaved in one batch (GSO groups runs by
// destination), and checks each receiver gets its own datagrams.
func TestUnconnected(t *testing.T) {
	for _, fam := range families {
		for _, gso := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/gso=%v", fam.name, gso), func(t *testing.T) {
				var rxs [3]*Device
				for i := range rxs {
					rxs[i] = openT(t, Config{Local: fam.addr})
				}
				tx := openT(t, Config{Local: fam.addr, GSO: gso})
				b := fill(t, tx, 0, 10)
				if err := tx.Xmit(b, false); !errors.Is(err, ErrNoDestination) {
					t.Fatalf("xmit without destination: %v", err)
				}
				if err := tx.SetDst(rxs[0].LocalAddr()); err != nil {
					t.Fatal(err)
				}
				const per = 12
				for i := range 3 * per {
					k := i / 4 % 3 // runs of four to each receiver
					seq := uint32(i)
					b := fill(t, tx, seq, 300)
					var err error
					if k == 0 {
						err = tx.Xmit(b, i < 3*per-1)
					} else {
						err = tx.XmitTo(b, rxs[k].LocalAddr(), i < 3*per-1)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				for k, rx := range rxs {
					g := collect(t, rx, per, 2*time.Second)
					if len(g) != per {
						t.Fatalf("receiver %d: got %d of %d", k, len(g), per)
					}
					for _, p := range g {
						if p.bad || int(p.seq)/4%3 != k || p.src != tx.LocalAddr() {
							t.Fatalf("receiver %d got %+v from %v", k, p, tx.LocalAddr())
						}
					}
				}
				if err := tx.XmitTo(fill(t, tx, 0, 10), netip.AddrPort{}, false); !errors.Is(err, ErrNoDestination) {
					t.Errorf("xmit to the zero address: %v", err)
				}
				if err := tx.XmitTo(fill(t, tx, 0, 10), netip.AddrPortFrom(fam.addr.Addr(), 0), false); !errors.Is(err, ErrNoDestination) {
					t.Errorf("xmit to port 0: %v", err)
				}
				if err := tx.SetDst(netip.AddrPortFrom(fam.addr.Addr(), 0)); !errors.Is(err, ErrNoDestination) || !strings.HasPrefix(err.Error(), "udp: set destination: ") {
					t.Errorf("destination port 0: %v", err)
				}
				unspec := netip.IPv4Unspecified()
				if fam.addr.Addr().Is6() {
					unspec = netip.IPv6Unspecified()
				}
				if err := tx.SetDst(netip.AddrPortFrom(unspec, 9)); !errors.Is(err, ErrNoDestination) {
					t.Errorf("destination %v: %v", unspec, err)
				}
				if err := tx.XmitTo(fill(t, tx, 0, 10), netip.AddrPortFrom(unspec, 9), false); !errors.Is(err, ErrNoDestination) {
					t.Errorf("xmit to %v: %v", unspec, err)
				}
				if fam.addr.Addr().Is4() {
					if err := tx.SetDst(lo6); !errors.Is(err, ErrNoDestination) {
						t.Errorf("IPv6 destination on an IPv4 socket: %v", err)
					}
				}
				if st := tx.Stats(); st.TxDropped[netdev.DropError] < 4 {
					t.Errorf("tx_dropped_error %d", st.TxDropped[netdev.DropError])
				}
			})
		}
	}
}

// TestDualStack receives IPv4 datagrams on an IPv6 socket bound to [::] and
// answers them: the source is given as IPv4.
func TestDualStack(t *testing.T) {
	rx := openT(t, Config{Local: netip.MustParseAddrPort("[::]:0")})
	dst := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), rx.LocalAddr().Port())
	tx := openT(t, Config{Remote: dst})
	if err := tx.Xmit(fill(t, tx, 7, 50), false); err != nil {
		t.Fatal(err)
	}
	g := collect(t, rx, 1, time.Second)
	if len(g) != 1 || g[0].seq != 7 || g[0].src != tx.LocalAddr() || !g[0].src.Addr().Is4() {
		t.Fatalf("got %+v, want from %v", g, tx.LocalAddr())
	}
	if err := rx.XmitTo(fill(t, rx, 8, 50), g[0].src, false); err != nil {
		t.Fatal(err)
	}
	if g := collect(t, tx, 1, time.Second); len(g) != 1 || g[0].seq != 8 {
		t.Fatalf("answer: %+v", g)
	}
}

// TestSrcConnected checks Src on connected devices: Remote, as a source is
// given (an IPv4-mapped Remote as IPv4), whether the datagram came by a
// one-datagram probe or a batch, and still after a Poll or Wait that found
// nothing ("valid until the next Poll or Wait receives more").
func TestSrcConnected(t *testing.T) {
	tx := openT(t, Config{Local: lo4})
	mapped := netip.AddrPortFrom(netip.AddrFrom16(tx.LocalAddr().Addr().As16()), tx.LocalAddr().Port())
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"ipv4", Config{Local: lo4, Remote: tx.LocalAddr()}},
		{"dual-stack, mapped remote", Config{Local: netip.MustParseAddrPort("[::]:0"), Remote: mapped}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx := openT(t, tc.cfg)
			dst := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), rx.LocalAddr().Port())
			if err := tx.SetDst(dst); err != nil {
				t.Fatal(err)
			}
			for _, budget := range []int{1, 64, 1} {
				if err := tx.Xmit(fill(t, tx, 1, 100), false); err != nil {
					t.Fatal(err)
				}
				// Poll until it comes (not Wait, which receives in a batch
				// call of its own): with budget 1, by the probe.
				var src netip.AddrPort
				var n int
				var err error
				for end := time.Now().Add(time.Second); n == 0 && err == nil && time.Now().Before(end); {
					n, err = rx.Poll(budget, func(b *skb.Buff) { src = rx.Src(); rx.Cache().Free(b) })
				}
				if n != 1 || err != nil || src != tx.LocalAddr() {
					t.Fatalf("Poll(%d) = %d, %v: Src %v, want %v", budget, n, err, src, tx.LocalAddr())
				}
				rx.Poll(budget, func(b *skb.Buff) { rx.Cache().Free(b) }) // nothing queued
				rx.Wait(0)
				if s := rx.Src(); s != tx.LocalAddr() {
					t.Fatalf("after Poll(%d) and an empty Poll and Wait: Src %v, want %v", budget, s, tx.LocalAddr())
				}
			}
		})
	}
}

// TestDualStackLimits checks the largest datagram of a dual-stack device:
// MaxDatagram6 to an IPv6 destination, MaxDatagram4 to an IPv4 one (one
// byte more is ErrTooBig, counted, and nothing is sent).
func TestDualStackLimits(t *testing.T) {
	c6, err := net.ListenUDP("udp6", net.UDPAddrFromAddrPort(lo6))
	if err != nil {
		t.Fatal(err)
	}
	defer c6.Close()
	c4, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(lo4))
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	d := openT(t, Config{Local: netip.MustParseAddrPort("[::]:0"), SndBuf: 1 << 20})
	buf := make([]byte, 1<<16)
	for _, tc := range []struct {
		conn *net.UDPConn
		max  int
	}{{c6, MaxDatagram6}, {c4, MaxDatagram4}} {
		to := tc.conn.LocalAddr().(*net.UDPAddr).AddrPort()
		if err := d.XmitTo(fill(t, d, 0, tc.max+1), to, false); !errors.Is(err, netdev.ErrTooBig) {
			t.Errorf("%d bytes to %v: %v, want ErrTooBig", tc.max+1, to, err)
		}
		if err := d.XmitTo(fill(t, d, 0, tc.max), to, false); err != nil {
			t.Fatalf("%d bytes to %v: %v", tc.max, to, err)
		}
		tc.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, _, err := tc.conn.ReadFromUDPAddrPort(buf); n != tc.max || err != nil {
			t.Fatalf("%v received %d bytes, %v; want %d", to, n, err, tc.max)
		}
	}
	if s := d.Stats(); s.TxDropped[netdev.DropTooBig] != 2 || s.TxPackets != 2 {
		t.Errorf("tx_packets %d, tx_dropped_too_big %d; want 2 and 2", s.TxPackets, s.TxDropped[netdev.DropTooBig])
	}
}

// TestKernelPeer talks to the kernel through a plain net.UDPConn on the
// other end, in both directions, with GSO on the sending device (the kernel
// segments) and GRO and busy polling on the receiving one.
func TestKernelPeer(t *testing.T) {
	for _, fam := range families {
		for _, offload := range []bool{false, true} {
			busy := map[bool]time.Duration{false: 0, true: 20 * time.Microsecond}[offload]
			t.Run(fmt.Sprintf("%s/offload=%v/busy=%v", fam.name, offload, busy), func(t *testing.T) {
				conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(fam.addr))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				peer := conn.LocalAddr().(*net.UDPAddr).AddrPort()
				d := openT(t, Config{Local: fam.addr, Remote: peer, GSO: offload, GRO: offload, RcvBuf: 1 << 20, BusyPoll: busy})
				// Device -> kernel socket.
				const n = 50
				sendRun(t, d, 0, n, 1200)
				buf := make([]byte, 2000)
				conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				for i := range n {
					k, from, err := conn.ReadFromUDPAddrPort(buf)
					if err != nil {
						t.Fatalf("datagram %d: %v", i, err)
					}
					seq, ok := checkPattern(buf[:k])
					if !ok || seq != uint32(i) || k != 1200 || from != d.LocalAddr() {
						t.Fatalf("datagram %d: seq %d len %d ok %v from %v", i, seq, k, ok, from)
					}
				}
				// Kernel socket -> device.
				dst := net.UDPAddrFromAddrPort(d.LocalAddr())
				for i := range n {
					p := make([]byte, 700)
					pattern(p, uint32(i))
					if _, err := conn.WriteToUDP(p, dst); err != nil {
						t.Fatal(err)
					}
				}
				g := collect(t, d, n, 2*time.Second)
				if len(g) != n {
					t.Fatalf("got %d of %d", len(g), n)
				}
				for i, p := range g {
					if p.bad || p.seq != uint32(i) || p.n != 700 || p.src != peer {
						t.Fatalf("datagram %d: %+v, want from %v", i, p, peer)
					}
				}
			})
		}
	}
}

// TestCloseWakesWait closes the device from another goroutine while Wait
// sleeps without a timeout: sleeping, busy polling, and keeping its P
// (KeepP), also with one P, where the goroutine that closes runs only once
// the runtime has preempted the waiting one; and sleeping in a receive of
// one datagram (rxq.waitOne), with and without KeepP.
func TestCloseWakesWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		procs int
		one   bool
	}{
		{"sleep", Config{}, 0, false},
		{"busy", Config{BusyPoll: 50 * time.Microsecond}, 0, false},
		{"keepp", Config{KeepP: true}, 0, false},
		{"keepp/gomaxprocs=1", Config{KeepP: true}, 1, false},
		{"sleep/one", Config{}, 0, true},
		{"keepp/one", Config{KeepP: true}, 0, true},
		{"keepp/one/gomaxprocs=1", Config{KeepP: true}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tc.procs))
			}
			tc.cfg.Local = lo4
			d, err := Open(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			d.rx.waitOne = tc.one
			errc := make(chan error)
			go func() { errc <- d.Wait(-1) }()
			time.Sleep(20 * time.Millisecond)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errc:
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("wait: %v", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Wait did not return after Close")
			}
		})
	}
}

// TestCloseUnderXmit closes a sending device from another goroutine while
// its owner rings doorbells: a send that Close's shutdown cut short returns
// an error matching ErrClosed (not EPIPE) and counts its datagrams in
// tx_dropped_closed, never tx_dropped_error. The owner's buffers come from
// a cache of its own, taken before the run: a Cache used outside the
// device's methods must not race with Close (netdev.Device.Cache).
func TestCloseUnderXmit(t *testing.T) {
	for _, burst := range []int{1, 16} {
		t.Run(fmt.Sprint(burst), func(t *testing.T) {
			for round := range 20 {
				p, err := pool.New(pool.Config{})
				if err != nil {
					t.Fatal(err)
				}
				tx, _ := pair(t, lo4, Config{Config: netdev.Config{Pool: p}}, Config{RcvBuf: 1 << 20})
				const n = 4000
				c := p.NewCache()
				bufs := make([]*skb.Buff, n)
				for i := range bufs {
					b, err := c.Alloc(64)
					if err != nil {
						t.Fatal(err)
					}
					b.Put(64)
					bufs[i] = b
				}
				delay := time.Duration(round%5) * 100 * time.Microsecond
				closed := make(chan struct{})
				go func() { time.Sleep(delay); tx.Close(); close(closed) }()
				var bad error
				i := 0
				for ; i < n; i++ {
					err := tx.Xmit(bufs[i], i%burst != burst-1)
					bufs[i] = nil
					if err == nil {
						continue
					}
					if !errors.Is(err, ErrClosed) {
						bad = err
					}
					break
				}
				for _, b := range bufs[min(i+1, n):] {
					c.Free(b)
				}
				<-closed
				c.Close()
				st := tx.Stats()
				if bad != nil || st.TxDropped[netdev.DropError] != 0 {
					t.Fatalf("round %d: Xmit under Close returned %v; tx_dropped_error %d; want errors matching ErrClosed, drops counted as closed (%v)",
						round, bad, st.TxDropped[netdev.DropError], st)
				}
				// Every packet given is counted once: sent or dropped.
				if given := uint64(min(i+1, n)); st.TxPackets+st.TxDroppedTotal() != given {
					t.Fatalf("round %d: %d packets given to Xmit, tx_packets %d + tx_dropped %d (%v)", round, given, st.TxPackets, st.TxDroppedTotal(), st)
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestClosed checks what every method does after Close, and that Close
// frees what was queued and posted.
func TestClosed(t *testing.T) {
	p, err := pool.New(pool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	tx, rx := pair(t, lo4, Config{Config: netdev.Config{Pool: p}, GSO: true}, Config{Config: netdev.Config{Pool: p}, GRO: true})
	// Queue without ringing, and leave datagrams pending in rx: the three
	// arrive as one GRO train, of which Poll hands over one.
	for i := range 3 {
		if err := tx.Xmit(fill(t, tx, uint32(i), 10), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := tx.Xmit(fill(t, tx, uint32(i), 10), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := rx.Wait(time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := rx.Poll(1, func(b *skb.Buff) { b.Free() }); n != 1 || err != nil {
		t.Fatalf("poll: %d %v", n, err)
	}
	b := fill(t, tx, 9, 10)
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	if st := tx.Stats(); st.TxDropped[netdev.DropClosed] != 5 {
		t.Errorf("tx_dropped_closed %d, want 5", st.TxDropped[netdev.DropClosed])
	}
	if st := rx.Stats(); st.RxDropped[netdev.DropClosed] != 2 {
		t.Errorf("rx_dropped_closed %d, want 2", st.RxDropped[netdev.DropClosed])
	}
	for name, err := range map[string]error{
		"close":  tx.Close(),
		"xmit":   tx.Xmit(b, false),
		"xmitto": tx.XmitTo(nil2(t, p), lo4, false),
		"flush":  tx.Flush(),
		"wait":   rx.Wait(0),
		"poll":   func() error { _, err := rx.Poll(1, func(b *skb.Buff) { b.Free() }); return err }(),
	} {
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s after close: %v", name, err)
		}
	}
	if tx.TxAvail() != 0 {
		t.Errorf("TxAvail after close: %d", tx.TxAvail())
	}
	if st := p.Stats(); st.InFlight() != 0 {
		t.Errorf("buffers in flight after close:\n%v", st)
	}
}

// nil2 allocates a buffer from p directly (the device's cache is closed).
func nil2(t testing.TB, p *pool.Pool) *skb.Buff {
	b, err := p.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	b.Put(10)
	return b
}

// TestCloseFromHandler closes the device from inside Poll's handler.
func TestCloseFromHandler(t *testing.T) {
	tx, rx := pair(t, lo4, Config{}, Config{})
	sendRun(t, tx, 0, 5, 100)
	if err := rx.Wait(time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	n, err := rx.Poll(64, func(b *skb.Buff) {
		b.Free()
		if err := rx.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("close in handler: %v", err)
		}
	})
	if n < 1 || err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("poll: %d %v", n, err)
	}
	if _, err := rx.Poll(64, func(b *skb.Buff) { b.Free() }); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("poll after close: %v", err)
	}
}

// TestErrors checks the errors Xmit and Open return and their prefixes.
func TestErrors(t *testing.T) {
	tx, _ := pair(t, lo4, Config{}, Config{})
	err := tx.Xmit(fill(t, tx, 0, MaxDatagram4+1), false)
	if !errors.Is(err, netdev.ErrTooBig) || !strings.HasPrefix(err.Error(), "udp: xmit: ") {
		t.Errorf("oversized datagram: %v", err)
	}
	if want := "udp: xmit: datagram longer than 65507 bytes, the most IPv4 carries: netdev: packet too big for the device"; err == nil || err.Error() != want {
		t.Errorf("oversized datagram: %v, want %q", err, want)
	}
	b := fill(t, tx, 0, 100)
	b.SetGSO(10, 10, skb.GSOTCPv4)
	if err := tx.Xmit(b, false); !errors.Is(err, errors.ErrUnsupported) || errors.Is(err, netdev.ErrTooBig) {
		t.Errorf("TCP GSO packet: %v, want an error matching errors.ErrUnsupported", err)
	}
	if st := tx.Stats(); st.TxDropped[netdev.DropTooBig] != 1 || st.TxDropped[netdev.DropError] != 10 {
		t.Errorf("tx_dropped_too_big %d (want 1), tx_dropped_error %d (want the 10 segments of the TCP GSO packet)", st.TxDropped[netdev.DropTooBig], st.TxDropped[netdev.DropError])
	}

	// A destination the socket cannot send to says why.
	for _, tc := range []struct {
		dst  netip.AddrPort
		want string
	}{
		{netip.AddrPort{}, "udp: xmit: no destination for the datagram"},
		{netip.MustParseAddrPort("[::1]:9"), "udp: xmit: no destination for the datagram: an IPv6 address on an IPv4 socket"},
		{netip.MustParseAddrPort("127.0.0.1:0"), "udp: xmit: no destination for the datagram: port 0"},
		{netip.MustParseAddrPort("0.0.0.0:9"), "udp: xmit: no destination for the datagram: the unspecified address"},
	} {
		err := tx.XmitTo(fill(t, tx, 0, 10), tc.dst, false)
		if !errors.Is(err, ErrNoDestination) || err.Error() != tc.want {
			t.Errorf("XmitTo %v: %v, want %q", tc.dst, err, tc.want)
		}
		err = tx.SetDst(tc.dst)
		if want := "udp: set destination: " + tc.dst.String() + strings.TrimPrefix(tc.want, "udp: xmit"); !errors.Is(err, ErrNoDestination) || err.Error() != want {
			t.Errorf("SetDst %v: %v, want %q", tc.dst, err, want)
		}
	}

	// A socket bound to an IPv6 address sends to no IPv4 one: refused
	// before the kernel would (ENETUNREACH at the doorbell).
	v6 := openT(t, Config{Local: netip.MustParseAddrPort("[::1]:0")})
	err = v6.XmitTo(fill(t, v6, 0, 10), netip.MustParseAddrPort("127.0.0.1:9"), false)
	if want := "udp: xmit: no destination for the datagram: an IPv4 address on an IPv6-only socket (bound or connected to an IPv6 address)"; !errors.Is(err, ErrNoDestination) || err.Error() != want {
		t.Errorf("XmitTo an IPv4 address from [::1]: %v, want %q", err, want)
	}
	if st := v6.Stats(); st.TxDropped[netdev.DropError] != 1 || st.TxDoorbells != 0 {
		t.Errorf("tx_dropped_error %d, tx_doorbells %d; want 1 and 0", st.TxDropped[netdev.DropError], st.TxDoorbells)
	}

	// A dual-stack socket connected to an IPv4-mapped peer sends IPv4
	// only: an IPv6 destination is refused before the kernel would
	// (EAFNOSUPPORT).
	peer := openT(t, Config{Local: lo4})
	mapped := netip.AddrPortFrom(netip.AddrFrom16(netip.MustParseAddr("127.0.0.1").As16()), peer.LocalAddr().Port())
	dual := openT(t, Config{Local: netip.MustParseAddrPort("[::]:0"), Remote: mapped})
	err = dual.XmitTo(fill(t, dual, 0, 10), netip.MustParseAddrPort("[::1]:9"), false)
	if want := "udp: xmit: no destination for the datagram: an IPv6 address on a socket connected to an IPv4 peer"; !errors.Is(err, ErrNoDestination) || err.Error() != want {
		t.Errorf("XmitTo an IPv6 address from a socket connected to %v: %v, want %q", mapped, err, want)
	}

	// ICMP port unreachable comes back as ECONNREFUSED on the next send
	// of a connected socket.
	icmptest.OnEachCPU(t, func() error {
		conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(lo4))
		if err != nil {
			t.Fatal(err)
		}
		gone := conn.LocalAddr().(*net.UDPAddr).AddrPort()
		conn.Close()
		d := openT(t, Config{Remote: gone})
		var last error
		for i := 0; i < 10 && last == nil; i++ {
			last = d.Xmit(fill(t, d, 0, 10), false)
			time.Sleep(time.Millisecond)
		}
		if !errors.Is(last, unix.ECONNREFUSED) || !strings.HasPrefix(last.Error(), "udp: sendmmsg: ") {
			return fmt.Errorf("send to a closed port: %v", last)
		}
		// The refusal of the last datagram, which no later send
		// reports, is the socket's pending error: read once.
		if err := d.Xmit(fill(t, d, 0, 10), false); err != nil {
			return fmt.Errorf("the send after the refusal: %v", err)
		}
		var pend error
		for i := 0; i < 100 && pend == nil; i++ {
			time.Sleep(time.Millisecond)
			pend = d.PendingError()
		}
		if !errors.Is(pend, unix.ECONNREFUSED) || d.PendingError() != nil {
			return fmt.Errorf("pending error after the last send to a closed port: %v, then %v; want ECONNREFUSED once", pend, d.PendingError())
		}
		d.Close()
		if err := d.PendingError(); !errors.Is(err, ErrClosed) {
			return fmt.Errorf("PendingError after Close: %v", err)
		}
		return nil
	})

	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Local: lo4, SndBuf: -1}, "udp: open: invalid config: SndBuf -1 bytes: want 0 (the default) or more"},
		{Config{Local: lo4, RecvSize: -2}, "udp: open: invalid config: RecvSize -2 bytes: want 0 (the default) or more"},
		{Config{Local: lo4, BusyPoll: -1}, "udp: open: invalid config: BusyPoll -1ns: want 0 (Wait sleeps) or more"},
		{Config{Remote: netip.MustParseAddrPort("127.0.0.1:0")}, "udp: open: invalid config: Remote 127.0.0.1:0: want an address and a port to send to"},
		{Config{Remote: netip.MustParseAddrPort("0.0.0.0:9")}, "udp: open: invalid config: Remote 0.0.0.0:9: want an address and a port to send to"},
		{Config{Remote: netip.MustParseAddrPort("[::ffff:0.0.0.0]:9")}, "udp: open: invalid config: Remote [::ffff:0.0.0.0]:9: want an address and a port to send to"},
		{Config{Remote: netip.MustParseAddrPort("[::]:9")}, "udp: open: invalid config: Remote [::]:9: want an address and a port to send to"},
	} {
		if _, err := Open(tc.cfg); !errors.Is(err, ErrConfig) || err.Error() != tc.want {
			t.Errorf("Open(%+v): %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// Past MaxSockBuf where an int holds it (a 32-bit int wraps to a
	// negative size, refused too).
	over := MaxSockBuf
	over++
	for _, cfg := range []Config{
		{Local: lo4, Remote: netip.MustParseAddrPort("[::1]:9")},
		{Local: lo4, SndBuf: -1},
		{Local: lo4, RecvSize: 1 << 20},
		{Config: netdev.Config{Batch: 1 << 30}, Local: lo4},
		{Config: netdev.Config{Headroom: -5}, Local: lo4},
		{Config: netdev.Config{Copybreak: -2}, Local: lo4},
		{Local: lo4, RcvBuf: over},
		{Local: lo4, SndBuf: over + 1},
	} {
		_, err := Open(cfg)
		if !errors.Is(err, ErrConfig) || !errors.Is(err, netdev.ErrConfig) || !strings.HasPrefix(err.Error(), "udp: open: ") {
			t.Errorf("Open(%+v): %v", cfg, err)
		}
	}
	// NoHeadroom is a headroom of none, not a negative size.
	if d, err := Open(Config{Config: netdev.Config{Headroom: netdev.NoHeadroom}, Local: lo4}); err != nil {
		t.Errorf("Open with NoHeadroom: %v", err)
	} else {
		d.Close()
	}
	_, err = Open(Config{Local: netip.MustParseAddrPort("192.0.2.1:0")})
	if !errors.Is(err, unix.EADDRNOTAVAIL) {
		t.Errorf("bind to an address not here: %v", err)
	}
}

// TestSrcBeforeReceive checks Src's zero value.
func TestSrcBeforeReceive(t *testing.T) {
	d := openT(t, Config{Local: lo4})
	if s := d.Src(); s.IsValid() {
		t.Errorf("Src before any datagram: %v", s)
	}
	if err := d.Wait(0); err != netdev.ErrTimeout {
		t.Errorf("Wait(0) on an empty socket: %v", err)
	}
	if err := d.Wait(5 * time.Millisecond); err != netdev.ErrTimeout {
		t.Errorf("Wait(5ms) on an empty socket: %v", err)
	}
	if n, err := d.Poll(64, func(b *skb.Buff) { d.Cache().Free(b) }); n != 0 || err != nil {
		t.Errorf("Poll on an empty socket: %d %v", n, err)
	}
}

// TestBuffers checks the socket buffer sizes, set with the FORCE options.
func TestBuffers(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("SO_SNDBUFFORCE and SO_RCVBUFFORCE need CAP_NET_ADMIN (run as root); without it the sizes are capped by net.core.wmem_max and rmem_max")
	}
	d := openT(t, Config{Local: lo4, SndBuf: 3 << 20, RcvBuf: 5 << 20})
	for opt, want := range map[int]int{unix.SO_SNDBUF: 6 << 20, unix.SO_RCVBUF: 10 << 20} {
		v, err := unix.GetsockoptInt(d.Fd(), unix.SOL_SOCKET, opt)
		if err != nil {
			t.Fatal(err)
		}
		// The kernel doubles the value (socket(7)).
		if v != want {
			t.Errorf("option %d: %d, want %d", opt, v, want)
		}
	}
}

// TestGSOLimits sends GSO runs that fill one UDP_SEGMENT message to the
// byte: 65507 bytes of payload over IPv4 (62×1040+1027) and 65527 over IPv6
// (63×1040+7), the most the kernel takes (ip_append_data and
// __ip6_append_data). The driver must not ask for more, which would turn
// GSO off (EMSGSIZE).
func TestGSOLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		local netip.AddrPort
		sizes []int
	}{
		{"ipv4", lo4, append(repeat(1040, 62), 1027)},
		{"ipv6", lo6, append(repeat(1040, 63), 7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, rx := pair(t, tc.local, Config{GSO: true}, Config{RcvBuf: 8 << 20})
			total := 0
			for i, n := range tc.sizes {
				total += n
				if err := tx.Xmit(fill(t, tx, uint32(i), n), i < len(tc.sizes)-1); err != nil {
					t.Fatal(err)
				}
			}
			if want := map[string]int{"ipv4": MaxDatagram4, "ipv6": MaxDatagram6}[tc.name]; total != want {
				t.Fatalf("test sends %d bytes, want %d", total, want)
			}
			g := collect(t, rx, len(tc.sizes), 2*time.Second)
			if len(g) != len(tc.sizes) {
				t.Fatalf("got %d of %d", len(g), len(tc.sizes))
			}
			st := tx.Stats()
			if !tx.GSO() || st.GSOFallbackTotal() != 0 || st.TxDoorbells != 1 {
				t.Errorf("GSO %v, counters %+v", tx.GSO(), st)
			}
		})
	}
}

func repeat(v, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestPollModes checks how Poll receives: after a batch call that found at
// most one datagram it probes for one and returns after it, the next call
// takes the rest as a batch, in order; datagrams that Wait took in one
// call are handed over by one Poll.
func TestPollModes(t *testing.T) {
	tx, rx := pair(t, lo4, Config{}, Config{})
	seq := uint32(0)
	send := func(n int) { t.Helper(); sendRun(t, tx, seq, n, 64); seq += uint32(n) }
	var got []uint32
	h := func(b *skb.Buff) {
		s, ok := checkPattern(b.Data())
		if !ok {
			t.Errorf("datagram %d corrupt", s)
		}
		got = append(got, s)
		rx.Cache().Free(b)
	}
	poll := func(want int) {
		t.Helper()
		n, err := rx.Poll(64, h)
		if err != nil || n != want {
			t.Fatalf("Poll: %d, %v; want %d", n, err, want)
		}
	}
	poll(0) // an empty batch call: sparse from now on
	send(5)
	// Loopback queues a datagram inside the sender's call: all 5 are there.
	poll(1) // a probe for one
	poll(4) // a batch
	poll(0)
	send(3)
	if err := rx.Wait(time.Second); err != nil {
		t.Fatal(err)
	}
	poll(3) // all that Wait took, with no call finding the queue empty
	for i, s := range got {
		if s != uint32(i) {
			t.Fatalf("order: got %v", got)
		}
	}
	if len(got) != 8 {
		t.Fatalf("got %d datagrams, want 8", len(got))
	}
}

// TestPanicLeavesDevice checks that a caller's misuse that panics inside
// Xmit, XmitTo or a Poll handler leaves the device, so that Close returns.
func TestPanicLeavesDevice(t *testing.T) {
	rx := openT(t, Config{Local: lo4})
	d, err := Open(Config{Remote: rx.LocalAddr()})
	if err != nil {
		t.Fatal(err)
	}
	mustPanic := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil {
				t.Errorf("%s: no panic", name)
			} else if want != "" && !strings.Contains(fmt.Sprint(r), want) {
				t.Errorf("%s: panic %v, want it to say %q", name, r, want)
			}
		}()
		f()
	}
	mustPanic("Xmit(nil)", "nil *skb.Buff", func() { d.Xmit(nil, false) })
	mustPanic("XmitTo(nil)", "nil *skb.Buff", func() { d.XmitTo(nil, rx.LocalAddr(), false) })
	if err := d.Xmit(fill(t, d, 0, 10), false); err != nil {
		t.Fatal(err)
	}
	if err := rx.Wait(time.Second); err != nil {
		t.Fatal(err)
	}
	mustPanic("handler", "boom", func() {
		rx.Poll(1, func(b *skb.Buff) {
			rx.Cache().Free(b)
			panic("boom")
		})
	})
	closed := make(chan error, 2)
	go func() { closed <- d.Close() }()
	go func() { closed <- rx.Close() }()
	for range 2 {
		select {
		case err := <-closed:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close hangs after a panic inside the device")
		}
	}
}

// TestNoDestinationText checks that XmitTo's error for a missing
// destination names the package once.
func TestNoDestinationText(t *testing.T) {
	d := openT(t, Config{Local: lo4})
	err := d.XmitTo(fill(t, d, 0, 10), netip.AddrPort{}, false)
	if !errors.Is(err, ErrNoDestination) || err.Error() != "udp: xmit: no destination for the datagram" {
		t.Errorf("XmitTo to nowhere: %v", err)
	}
}

// TestClosedErrors checks that every method after Close returns an error
// that matches ErrClosed and names the operation.
func TestClosedErrors(t *testing.T) {
	d, err := Open(Config{Local: lo4})
	if err != nil {
		t.Fatal(err)
	}
	b := fill(t, d, 0, 10)
	d.Close()
	for op, err := range map[string]error{
		"udp: xmit: ":            d.Xmit(b, false),
		"udp: flush: ":           d.Flush(),
		"udp: close: ":           d.Close(),
		"udp: set destination: ": d.SetDst(lo4),
		"udp: wait: ":            d.Wait(0),
		"udp: poll: ":            func() error { _, err := d.Poll(1, func(b *skb.Buff) { b.Free() }); return err }(),
	} {
		if !errors.Is(err, ErrClosed) || !strings.HasPrefix(err.Error(), op) {
			t.Errorf("after Close: %v, want %q and ErrClosed", err, op)
		}
	}
}

// TestCloseDuringRunOnThread closes a device from another goroutine while
// its goroutine waits in it on a thread with a private descriptor table
// (netdev.RunOnThread): the device releases on that thread, and its socket
// must still be closed in the process's table, so that its port is free
// once RunOnThread has returned.
func TestCloseDuringRunOnThread(t *testing.T) {
	d, err := Open(Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		t.Fatal(err)
	}
	addr := d.LocalAddr()
	if !netdevtest.CloseDuringRunOnThread(t, d) {
		t.Skip("the kernel refused a private descriptor table here (seccomp?)")
	}
	c, err := net.ListenPacket("udp4", addr.String())
	if err != nil {
		t.Fatalf("%v still bound after Close and RunOnThread returned: %v", addr, err)
	}
	c.Close()
}

// TestCloseInRunOnThread closes a device on the thread with a private
// descriptor table that uses it: its port is free once RunOnThread has
// returned.
func TestCloseInRunOnThread(t *testing.T) {
	d, err := Open(Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		t.Fatal(err)
	}
	addr := d.LocalAddr()
	var closeErr error
	private, err := netdev.RunOnThread(-1, func() { closeErr = d.Close() })
	if err != nil || closeErr != nil {
		t.Fatal(err, closeErr)
	}
	if !private {
		t.Skip("the kernel refused a private descriptor table here (seccomp?)")
	}
	c, err := net.ListenPacket("udp4", addr.String())
	if err != nil {
		t.Fatalf("%v still bound after Close in RunOnThread: %v", addr, err)
	}
	c.Close()
}

// TestNoSrc receives with Config.NoSrc through every receive call (a
// one-datagram probe, a batch, a sleeping and a spinning Wait, a GRO
// train): the data arrives whole and in order, and Src gives the zero
// AddrPort.
func TestNoSrc(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"ipv4", Config{Local: lo4, NoSrc: true}},
		{"dual-stack", Config{Local: netip.MustParseAddrPort("[::]:0"), NoSrc: true}},
		{"busy-poll", Config{Local: lo4, NoSrc: true, BusyPoll: time.Microsecond}},
		{"gro", Config{Local: lo4, NoSrc: true, GRO: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx := openT(t, tc.cfg)
			dst := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), rx.LocalAddr().Port())
			tx := openT(t, Config{Remote: dst, GSO: tc.cfg.GRO})
			seq := uint32(0)
			send := func(n int) { t.Helper(); sendRun(t, tx, seq, n, 300); seq += uint32(n) }
			var out []uint32
			h := func(b *skb.Buff) {
				s, ok := checkPattern(b.Data())
				if !ok || b.Len() != 300 {
					t.Errorf("datagram %d: %d bytes, pattern ok %v", s, b.Len(), ok)
				}
				if src := rx.Src(); src.IsValid() {
					t.Errorf("Src %v, want the zero AddrPort", src)
				}
				out = append(out, s)
				rx.Cache().Free(b)
			}
			poll := func(budget int) {
				t.Helper()
				for end := time.Now().Add(time.Second); time.Now().Before(end); {
					n, err := rx.Poll(budget, h)
					if err != nil {
						t.Fatal(err)
					}
					if n > 0 {
						return
					}
				}
				t.Fatalf("Poll(%d): nothing came", budget)
			}
			send(1)
			poll(1) // the probe
			send(5)
			poll(64) // a batch
			send(3)
			if err := rx.Wait(time.Second); err != nil {
				t.Fatal(err)
			}
			poll(64)
			for len(out) < int(seq) {
				poll(64)
			}
			for i, s := range out {
				if s != uint32(i) {
					t.Fatalf("order: got %v", out)
				}
			}
		})
	}
}

// TestPktInfo answers clients connected to an address other than the one
// the route back picks (127.0.0.2, and ::1 on a dual-stack socket) from a
// device bound to the unspecified address: with PktInfo, DstAddr names the
// address each request came to and XmitFrom answers from it, which the
// clients (Go's net package, connected, so they drop datagrams from any
// other source) take; alone, in a batch, as one GSO run, and with a
// busy-polling probe. Without PktInfo the same answers are dropped by the
// clients, which shows the test can fail.
func TestPktInfo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		clients []string
		answer  bool
	}{
		{"ipv4", Config{Local: netip.MustParseAddrPort("0.0.0.0:0"), PktInfo: true}, []string{"127.0.0.2", "127.0.0.1"}, true},
		{"dual-stack", Config{Local: netip.MustParseAddrPort("[::]:0"), PktInfo: true}, []string{"127.0.0.2", "::1"}, true},
		{"gso", Config{Local: netip.MustParseAddrPort("0.0.0.0:0"), PktInfo: true, GSO: true}, []string{"127.0.0.2"}, true},
		{"busy-poll", Config{Local: netip.MustParseAddrPort("0.0.0.0:0"), PktInfo: true, BusyPoll: time.Microsecond}, []string{"127.0.0.2"}, true},
		{"gro", Config{Local: netip.MustParseAddrPort("0.0.0.0:0"), PktInfo: true, GRO: true}, []string{"127.0.0.2"}, true},
		{"without", Config{Local: netip.MustParseAddrPort("0.0.0.0:0")}, []string{"127.0.0.2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openT(t, tc.cfg)
			port := srv.LocalAddr().Port()
			for _, host := range tc.clients {
				c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(host), port)))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				req := make([]byte, 200)
				const n = 8
				for i := range n {
					pattern(req, uint32(i))
					if _, err := c.Write(req); err != nil {
						t.Fatal(err)
					}
				}
				// Answer them all in one doorbell: equal sizes, one
				// destination and one source, one GSO run with GSO on.
				got := 0
				var errs []error
				for end := time.Now().Add(2 * time.Second); got < n && time.Now().Before(end); {
					if err := srv.Wait(100 * time.Millisecond); err != nil && err != netdev.ErrTimeout {
						t.Fatal(err)
					}
					_, err := srv.Poll(64, func(b *skb.Buff) {
						got++
						if want := netip.MustParseAddr(host).Unmap(); tc.answer && srv.DstAddr() != want {
							t.Errorf("DstAddr %v, want %v", srv.DstAddr(), want)
						}
						if !tc.answer && srv.DstAddr().IsValid() {
							t.Errorf("DstAddr %v without PktInfo", srv.DstAddr())
						}
						if err := srv.XmitFrom(b, srv.DstAddr(), srv.Src(), got < n); err != nil {
							errs = append(errs, err)
						}
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				if got != n || len(errs) > 0 {
					t.Fatalf("%s: server got %d of %d requests, answer errors %v", host, got, n, errs)
				}
				if err := srv.Flush(); err != nil {
					t.Fatal(err)
				}
				// Answers due get 2 s (a loaded machine may stall the
				// first read); none due, 300 ms to show that none comes.
				wait := 300 * time.Millisecond
				if tc.answer {
					wait = 2 * time.Second
				}
				c.SetReadDeadline(time.Now().Add(wait))
				buf := make([]byte, 2048)
				var seqs []uint32
				for {
					k, err := c.Read(buf)
					if err != nil {
						break
					}
					s, ok := checkPattern(buf[:k])
					if !ok || k != len(req) {
						t.Errorf("%s: answer of %d bytes, pattern ok %v", host, k, ok)
					}
					seqs = append(seqs, s)
					if len(seqs) == n {
						// All came: a little longer for any extra.
						c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
					}
				}
				switch {
				case tc.answer && len(seqs) != n:
					t.Errorf("%s: client took %d of %d answers %v; server %+v", host, len(seqs), n, seqs, srv.Stats())
				case !tc.answer && len(seqs) != 0:
					t.Errorf("%s: client took %d answers from the route's address; the test cannot tell", host, len(seqs))
				}
			}
			if st := srv.Stats(); st.TxDroppedTotal() != 0 {
				t.Errorf("tx_dropped %d: %v", st.TxDroppedTotal(), st.Map())
			}
		})
	}
}

// TestXmitFromBadSource checks XmitFrom's refusals: a source of another
// family or a multicast one is dropped with ErrSource before the doorbell;
// one that is not this host's is refused by the kernel (EINVAL, or
// ENETUNREACH from the route lookup) for its datagrams alone, without
// turning GSO off, and the rest of the batch goes: as GSO runs before and
// after it, over IPv4, IPv6 and a dual-stack socket. A GSO run from a good
// source that the kernel refuses to segment (SO_NO_CHECK) still falls back
// to plain sends.
func TestXmitFromBadSource(t *testing.T) {
	for _, tc := range []struct {
		name, local, to, src, other, bad string
	}{
		{"ipv4", "0.0.0.0:0", "127.0.0.1", "127.0.0.1", "::1", "198.18.0.9"},
		{"dual-stack", "[::]:0", "127.0.0.1", "127.0.0.1", "::1", "198.18.0.9"},
		{"ipv6", "[::1]:0", "::1", "::1", "127.0.0.1", "fd00::9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := netip.MustParseAddr(tc.to)
			rx := openT(t, Config{Local: netip.AddrPortFrom(to, 0)})
			tx := openT(t, Config{Local: netip.MustParseAddrPort(tc.local), GSO: true})
			dst := netip.AddrPortFrom(to, rx.LocalAddr().Port())
			for _, src := range []string{tc.other, "224.0.0.1", "ff02::1"} {
				if err := tx.XmitFrom(fill(t, tx, 0, 100), netip.MustParseAddr(src), dst, false); !errors.Is(err, ErrSource) {
					t.Errorf("source %s: %v, want ErrSource", src, err)
				}
			}
			// Three GSO runs: two good, one of a bad source between them.
			srcs := []string{tc.src, tc.src, tc.bad, tc.bad, tc.src, tc.src}
			var err error
			for i, s := range srcs {
				err = tx.XmitFrom(fill(t, tx, uint32(i), 100), netip.MustParseAddr(s), dst, i < len(srcs)-1)
			}
			if err == nil || errors.Is(err, ErrSource) {
				t.Errorf("doorbell: %v, want the kernel's refusal of %s", err, tc.bad)
			}
			t.Logf("source %s: %v", tc.bad, err)
			g := collect(t, rx, 4, time.Second)
			if len(g) != 4 || !tx.GSO() {
				t.Errorf("received %d of 4; GSO still on: %v", len(g), tx.GSO())
			}
			st := tx.Stats()
			if st.TxDropped[netdev.DropError] != 5 || st.TxPackets != 4 || st.GSOFallbackTotal() != 0 {
				t.Errorf("tx_dropped_error %d (want 5: three ErrSource, two refused), tx_packets %d (want 4), gso_fallback %d (want 0)",
					st.TxDropped[netdev.DropError], st.TxPackets, st.GSOFallbackTotal())
			}
			// A GSO run from a good source the kernel will not segment
			// (SO_NO_CHECK, set through Fd): sent plainly, GSO off.
			if tc.name == "ipv4" {
				if err := unix.SetsockoptInt(tx.Fd(), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1); err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					if err := tx.XmitFrom(fill(t, tx, uint32(10+i), 300), netip.MustParseAddr(tc.src), dst, i < 2); err != nil {
						t.Errorf("XmitFrom with SO_NO_CHECK: %v", err)
					}
				}
				g := collect(t, rx, 3, time.Second)
				st := tx.Stats()
				if len(g) != 3 || tx.GSO() || st.GSOFallback[netdev.FallbackEINVAL] != 1 {
					t.Errorf("SO_NO_CHECK: received %d of 3, GSO on %v, gso_fallback_einval %d (want 1)",
						len(g), tx.GSO(), st.GSOFallback[netdev.FallbackEINVAL])
				}
			}
		})
	}
}

// TestPktInfoBroadcast sends a broadcast (127.255.255.255) to servers bound
// to 0.0.0.0 and :: with PktInfo: DstAddr must be the local address the
// kernel picks (IP_PKTINFO's ipi_spec_dst), not the broadcast address, with
// no control message cut short (MSG_CTRUNC), also on a dual-stack socket
// with GRO, where an IPv4 datagram brings three control messages; and the
// answer from it reaches the sender.
func TestPktInfoBroadcast(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"ipv4", Config{Local: netip.MustParseAddrPort("0.0.0.0:0"), PktInfo: true}},
		{"dual-stack", Config{Local: netip.MustParseAddrPort("[::]:0"), PktInfo: true}},
		{"dual-stack/gro", Config{Local: netip.MustParseAddrPort("[::]:0"), PktInfo: true, GRO: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openT(t, tc.cfg)
			c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(lo4))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rc, err := c.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1)
			}); err != nil || serr != nil {
				t.Fatal(err, serr)
			}
			bcast := netip.AddrPortFrom(netip.MustParseAddr("127.255.255.255"), srv.LocalAddr().Port())
			req := make([]byte, 100)
			pattern(req, 7)
			if _, err := c.WriteToUDPAddrPort(req, bcast); err != nil {
				t.Fatal(err)
			}
			var from netip.Addr
			got := 0
			for end := time.Now().Add(2 * time.Second); got == 0 && time.Now().Before(end); {
				if err := srv.Wait(100 * time.Millisecond); err != nil && err != netdev.ErrTimeout {
					t.Fatal(err)
				}
				if _, err := srv.Poll(1, func(b *skb.Buff) {
					got++
					from = srv.DstAddr()
					if f := srv.rx.batch.Hdrs[srv.rx.cur].Hdr.Flags; f&unix.MSG_CTRUNC != 0 {
						t.Errorf("control messages cut short (MSG_CTRUNC), flags %#x", f)
					}
					if err := srv.XmitFrom(b, from, srv.Src(), false); err != nil {
						t.Errorf("XmitFrom(%v): %v", from, err)
					}
				}); err != nil {
					t.Fatal(err)
				}
			}
			if got != 1 || !from.IsValid() || from == bcast.Addr() {
				t.Fatalf("got %d, DstAddr %v: want a local address, not the broadcast", got, from)
			}
			c.SetReadDeadline(time.Now().Add(time.Second))
			buf := make([]byte, 2048)
			n, ap, err := c.ReadFromUDPAddrPort(buf)
			if err != nil || n != len(req) || ap.Addr().Unmap() != from {
				t.Errorf("answer: %d bytes from %v, %v; want %d from %v", n, ap, err, len(req), from)
			}
		})
	}
}

// TestXmitToAlternating sends to two receivers in turn, with refused
// destinations between, single and queued: every datagram arrives where
// it was addressed (XmitTo keeps its latest destination's sockaddr). A
// sender connected to the first receiver sends to it without an address
// (XmitTo to the connected peer), and to the second with one.
func TestXmitToAlternating(t *testing.T) {
	for _, connected := range []bool{false, true} {
		t.Run(fmt.Sprint("connected=", connected), func(t *testing.T) { xmitToAlternating(t, connected) })
	}
}

func xmitToAlternating(t *testing.T, connected bool) {
	rx := [2]*Device{openT(t, Config{Local: lo4}), openT(t, Config{Local: lo4})}
	cfg := Config{Local: lo4}
	if connected {
		cfg.Remote = rx[0].LocalAddr()
	}
	tx := openT(t, cfg)
	bad := netip.MustParseAddrPort("0.0.0.0:9")
	const rounds = 20
	for i := range uint32(rounds) {
		to := rx[i%2].LocalAddr()
		if err := tx.XmitTo(fill(t, tx, i, 32), to, i%3 == 0); err != nil {
			t.Fatalf("XmitTo %v: %v", to, err)
		}
		if err := tx.XmitTo(fill(t, tx, 1000+i, 32), bad, false); !errors.Is(err, ErrNoDestination) {
			t.Fatalf("XmitTo %v after %v: %v, want ErrNoDestination", bad, to, err)
		}
	}
	if err := tx.Flush(); err != nil {
		t.Fatal(err)
	}
	for k, d := range rx {
		var got []uint32
		deadline := time.Now().Add(5 * time.Second)
		for len(got) < rounds/2 && time.Now().Before(deadline) {
			d.Wait(10 * time.Millisecond)
			d.Poll(64, func(b *skb.Buff) {
				seq, _ := checkPattern(b.Data())
				got = append(got, seq)
				b.Free()
			})
		}
		for j, seq := range got {
			if seq%2 != uint32(k) || j >= rounds/2 {
				t.Fatalf("receiver %d got %v; want the sequence numbers ≡ %d mod 2, %d of them", k, got, k, rounds/2)
			}
		}
		if len(got) != rounds/2 {
			t.Fatalf("receiver %d got %d datagrams, want %d", k, len(got), rounds/2)
		}
	}
}
