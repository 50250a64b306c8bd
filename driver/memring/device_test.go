package memring_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// newPool returns a debug pool that the test closes, failing on leaks.
func newPool(t *testing.T, cfg pool.Config) *pool.Pool {
	t.Helper()
	cfg.Debug = true
	cfg.Name = t.Name()
	p, err := pool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// newPair returns a pair on a debug pool; both devices are closed before the
// pool is checked.
func newPair(t *testing.T, cfg memring.Config) (a, b *memring.Device, p *pool.Pool) {
	t.Helper()
	if cfg.Pool == nil {
		cfg.Pool = newPool(t, pool.Config{})
	}
	a, b, err := memring.NewPair(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b, cfg.Pool
}

// xmit sends a packet of size bytes carrying seq from d's cache.
func xmit(t *testing.T, d *memring.Device, seq uint32, size int, more bool) {
	t.Helper()
	x, err := d.Cache().Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	netdevtest.PutPayload(x.Put(size), seq)
	if err := d.Xmit(x, more); err != nil {
		t.Fatalf("Xmit(seq %d, %d bytes, more=%v): %v", seq, size, more, err)
	}
}

// collect polls d until it has no packet ready and returns the sequence
// numbers it got, freeing the buffers.
func collect(t *testing.T, d *memring.Device) []uint32 {
	t.Helper()
	var got []uint32
	c := d.Cache()
	for {
		n, err := d.Poll(64, func(b *skb.Buff) {
			s, _, _ := seq(b)
			got = append(got, s)
			c.Free(b)
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return got
		}
	}
}

func TestConfigErrors(t *testing.T) {
	p := newPool(t, pool.Config{})
	for _, cfg := range []memring.Config{
		{RingSize: 3},
		{RingSize: -4},
		{RingSize: 1 << 17},
		{RxBufSize: -1},
		{RxBufSize: 1 << 20},
		{DoorbellCost: -time.Nanosecond},
	} {
		cfg.Pool = p
		a, b, err := memring.NewPair(cfg)
		if !errors.Is(err, memring.ErrConfig) || !errors.Is(err, netdev.ErrConfig) || a != nil || b != nil || !strings.HasPrefix(err.Error(), "memring: new pair: invalid config: ") {
			t.Errorf("NewPair(RingSize %d, RxBufSize %d, DoorbellCost %v) = %v, %v, %v; want ErrConfig, \"memring: new pair: invalid config: \"",
				cfg.RingSize, cfg.RxBufSize, cfg.DoorbellCost, a, b, err)
		}
	}
}

// TestDoorbells checks memring's exact doorbell accounting: the ring rings
// when an Xmit finds it full (lazily), once per batch otherwise.
func TestDoorbells(t *testing.T) {
	a, b, _ := newPair(t, memring.Config{})
	for i := range 64 {
		xmit(t, a, uint32(i), 100, i < 63)
	}
	if s := a.Stats(); s.TxDoorbells != 1 || s.TxPackets != 64 || s.TxRingFull != 0 {
		t.Errorf("a burst of 64 ended by more=false: tx_doorbells %d tx_packets %d tx_ring_full %d; want 1 64 0", s.TxDoorbells, s.TxPackets, s.TxRingFull)
	}
	collect(t, b)
	for i := range 130 {
		xmit(t, a, uint32(i), 100, true)
	}
	if s := a.Stats(); s.TxDoorbells != 3 || s.TxPackets != 64+128 || s.TxRingFull != 2 || a.TxAvail() != 62 {
		t.Errorf("130 packets with more=true: tx_doorbells %d tx_packets %d tx_ring_full %d TxAvail %d; want 3 192 2 62",
			s.TxDoorbells, s.TxPackets, s.TxRingFull, a.TxAvail())
	}
	a.Flush()
	a.Flush()
	if s := a.Stats(); s.TxDoorbells != 4 || s.TxPackets != 64+130 {
		t.Errorf("after Flush twice: tx_doorbells %d tx_packets %d; want 4 194", s.TxDoorbells, s.TxPackets)
	}
	if got := collect(t, b); len(got) != 130 {
		t.Errorf("received %d packets, want 130", len(got))
	}
}

// TestCloneOnXmit checks the ablation switch: with CloneOnXmit every Xmit
// takes a clone's header from the pool (what the conformance suite's "no
// clone" rule refuses, so this configuration is not run through the suite),
// and the packets still arrive, in order.
func TestCloneOnXmit(t *testing.T) {
	for _, clone := range []bool{false, true} {
		t.Run(fmt.Sprint(clone), func(t *testing.T) {
			a, b, p := newPair(t, memring.Config{CloneOnXmit: clone})
			blockless := func() int64 {
				st := p.Stats()
				n := int64(st.Headers.Allocs)
				for _, c := range st.Classes {
					n -= int64(c.Allocs)
				}
				return n
			}
			const n = 40
			before := blockless()
			for i := range n {
				xmit(t, a, uint32(i), 100, i < n-1)
			}
			want := int64(0)
			if clone {
				want = n
			}
			if d := blockless() - before; d != want {
				t.Errorf("CloneOnXmit %v: %d packets sent took %d clone headers; want %d", clone, n, d, want)
			}
			if got := collect(t, b); len(got) != n || got[0] != 0 || got[n-1] != n-1 {
				t.Errorf("received %d packets (%v), want seq 0 to %d", len(got), got, n-1)
			}
		})
	}
}

// TestDoorbellCost checks that a doorbell with a cost waits at least that
// long (a lower bound only: the machine may be slower, never faster), and
// that a batch pays it once.
func TestDoorbellCost(t *testing.T) {
	const cost = 2 * time.Millisecond
	a, b, _ := newPair(t, memring.Config{DoorbellCost: cost})
	start := time.Now()
	for i := range 5 {
		xmit(t, a, uint32(i), 100, false)
	}
	if d := time.Since(start); d < 5*cost {
		t.Errorf("5 doorbells with DoorbellCost %v took %v; want at least %v", cost, d, 5*cost)
	}
	start = time.Now()
	for i := range 32 {
		xmit(t, a, uint32(5+i), 100, i < 31)
	}
	d := time.Since(start)
	if s := a.Stats(); s.TxDoorbells != 6 {
		t.Errorf("5 single packets and a burst of 32: tx_doorbells %d, want 6", s.TxDoorbells)
	}
	if d < cost {
		t.Errorf("a burst of 32 with one doorbell took %v; want at least its cost %v", d, cost)
	}
	if got := collect(t, b); len(got) != 37 {
		t.Errorf("received %d packets, want 37", len(got))
	}
}

// TestNoBuffer fills the receiver's ring: what does not fit is dropped and
// counted at the receiver, what fits arrives in order.
func TestNoBuffer(t *testing.T) {
	const ring, extra = 16, 10
	a, b, _ := newPair(t, memring.Config{RingSize: ring, Config: netdev.Config{Batch: 8}})
	for i := range ring + extra {
		xmit(t, a, uint32(i), 600, i < ring+extra-1)
	}
	st := b.Stats()
	if st.RxDropped[netdev.DropNoBuffer] != extra || a.Stats().TxPackets != ring+extra {
		t.Errorf("rx_dropped_nobuf %d, tx_packets %d; want %d and %d", st.RxDropped[netdev.DropNoBuffer], a.Stats().TxPackets, extra, ring+extra)
	}
	got := collect(t, b)
	if len(got) != ring {
		t.Fatalf("received %d packets, want %d", len(got), ring)
	}
	for i, s := range got {
		if s != uint32(i) {
			t.Fatalf("packet %d carries seq %d", i, s)
		}
	}
	// The ring is posted again: the next packets arrive.
	xmit(t, a, 99, 600, false)
	if got := collect(t, b); len(got) != 1 || got[0] != 99 {
		t.Errorf("after the ring drained, received %v; want [99]", got)
	}
}

// TestPoolExhausted bounds the pool: a packet whose ring buffer cannot be
// replaced is dropped and its buffer reposted; copybreak still delivers small
// packets, which need no replacement.
func TestPoolExhausted(t *testing.T) {
	const ring = 8
	p := newPool(t, pool.Config{Classes: []pool.Class{{Size: 512}, {Size: 2048, Max: 2 * ring}}, CacheSize: 2})
	a, b, _ := newPair(t, memring.Config{RingSize: ring, Config: netdev.Config{Pool: p}})
	for i := range 3 {
		xmit(t, a, uint32(i), 300, false) // a 512-byte block, not copied on receive
	}
	xmit(t, a, 3, 100, false) // under the copybreak threshold
	got := collect(t, b)
	st := b.Stats()
	if len(got) != 1 || got[0] != 3 || st.RxDropped[netdev.DropNoBuffer] != 3 || st.RxCopybreak != 1 {
		t.Errorf("with no 2048-byte block left: received %v, rx_dropped_nobuf %d, rx_copybreak %d; want [3], 3, 1",
			got, st.RxDropped[netdev.DropNoBuffer], st.RxCopybreak)
	}
	if ps := p.Stats(); ps.Classes[1].Exhausted == 0 {
		t.Errorf("the pool counted no exhaustion: %v", ps)
	}
}

// TestEcho has B's handler transmit every packet back on B: Xmit from inside
// Poll's handler, on the same device.
func TestEcho(t *testing.T) {
	a, b, _ := newPair(t, memring.Config{})
	const n = 100
	for i := range n {
		xmit(t, a, uint32(i), 64+i, i%10 != 9)
	}
	var echoErr error
	for {
		k, err := b.Poll(16, func(x *skb.Buff) {
			if err := b.Xmit(x, true); err != nil && echoErr == nil {
				echoErr = err
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			break
		}
	}
	if echoErr != nil {
		t.Fatal(echoErr)
	}
	b.Flush()
	got := collect(t, a)
	if len(got) != n {
		t.Fatalf("echoed %d packets, want %d", len(got), n)
	}
	for i, s := range got {
		if s != uint32(i) {
			t.Fatalf("echo %d carries seq %d", i, s)
		}
	}
}

// TestTwoGoroutines runs each device on its own goroutine, each sending to
// the other while receiving, on small rings that wrap hundreds of times: the
// race detector checks the ring's memory order, and every packet is either
// delivered in order and intact or counted as dropped. The senders pace
// themselves on what the peer has taken (credits), so that most packets take
// the concurrent path rather than the drop.
func TestTwoGoroutines(t *testing.T) {
	const packets, ring = 20000, 32
	p, err := pool.New(pool.Config{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	a, b, _ := newPair(t, memring.Config{RingSize: ring, Config: netdev.Config{Pool: p, Batch: 8}})
	type result struct {
		got, bad int
		err      error
	}
	var taken [2]atomic.Int64 // packets each device polled or dropped
	run := func(me int, d, peer *memring.Device, out chan<- result) {
		var r result
		c := d.Cache()
		next := uint32(0)
		want := make([]byte, 300)
		h := func(x *skb.Buff) {
			s, n, _ := seq(x)
			netdevtest.PutPayload(want[:n], s)
			if s < next || n != 64+int(s%200) || string(x.Data()) != string(want[:n]) {
				r.bad++
			}
			next = s + 1
			r.got++
			c.Free(x)
		}
		poll := func() {
			_, err := d.Poll(8, h)
			if err != nil {
				r.err = err
			}
			taken[me].Store(int64(r.got) + int64(d.Stats().RxDroppedTotal()))
		}
		sent := uint32(0)
		for sent < packets {
			for int64(sent)-taken[1-me].Load() > ring-13 {
				poll() // give the peer room, and keep taking what it sends
				runtime.Gosched()
			}
			burst := 1 + int(sent%13)
			for i := 0; i < burst && sent < packets; i++ {
				x, err := c.Alloc(300)
				if err != nil {
					r.err = err
					break
				}
				netdevtest.PutPayload(x.Put(64+int(sent%200)), sent)
				if err := d.Xmit(x, i < burst-1); err != nil {
					r.err = err
				}
				sent++
			}
			d.Flush()
			poll()
		}
		// Drain what the peer still sends.
		for d.Wait(100*time.Millisecond) == nil {
			poll()
		}
		out <- r
	}
	ra, rb := make(chan result, 1), make(chan result, 1)
	go run(0, a, b, ra)
	go run(1, b, a, rb)
	for _, x := range []struct {
		name string
		d    *memring.Device
		r    result
	}{{"a", a, <-ra}, {"b", b, <-rb}} {
		st := x.d.Stats()
		dropped := st.RxDropped[netdev.DropNoBuffer]
		if x.r.err != nil || x.r.bad != 0 || uint64(x.r.got) != st.RxPackets || st.RxPackets+dropped != packets {
			t.Errorf("%s: error %v, %d bad of %d received; rx_packets %d + rx_dropped_nobuf %d, want %d in all",
				x.name, x.r.err, x.r.bad, x.r.got, st.RxPackets, dropped, packets)
		}
		t.Logf("%s: %d received, %d dropped for want of a posted buffer, %d doorbells", x.name, st.RxPackets, dropped, st.TxDoorbells)
	}
}

// TestCloseDuringPoll closes a device from another goroutine while its
// owner's handler is running: Close returns at once, Poll hands nothing more
// over, and the buffers are freed when Poll returns.
func TestCloseDuringPoll(t *testing.T) {
	a, b, _ := newPair(t, memring.Config{})
	for i := range 4 {
		xmit(t, a, uint32(i), 100, i < 3)
	}
	inHandler, release := make(chan struct{}), make(chan struct{})
	polled := make(chan error, 1)
	go func() {
		c := b.Cache()
		first := true
		_, err := b.Poll(64, func(x *skb.Buff) {
			c.Free(x)
			if first {
				first = false
				close(inHandler)
				<-release
			}
		})
		_, err2 := b.Poll(64, func(x *skb.Buff) { x.Free() })
		switch {
		case !errors.Is(err, netdev.ErrClosed):
			err = fmt.Errorf("Poll closed while its handler ran returned %v; want ErrClosed", err)
		case !errors.Is(err2, netdev.ErrClosed):
			err = fmt.Errorf("Poll after Close returned %v", err2)
		default:
			err = nil
		}
		polled <- err
	}()
	<-inHandler
	if err := b.Close(); err != nil {
		t.Errorf("Close during Poll: %v", err)
	}
	close(release)
	if err := <-polled; err != nil {
		t.Errorf("Poll during Close: %v", err)
	}
	if st := b.Stats(); st.RxPackets != 1 || st.RxDropped[netdev.DropClosed] != 3 {
		t.Errorf("rx_packets %d, rx_dropped_closed %d; want 1 handed over before Close, 3 never polled", st.RxPackets, st.RxDropped[netdev.DropClosed])
	}
	// What a sends now finds the peer closed.
	xmit(t, a, 9, 100, false)
	if st := b.Stats(); st.RxDropped[netdev.DropClosed] != 4 {
		t.Errorf("rx_dropped_closed %d after a packet was sent to a closed device; want 4", st.RxDropped[netdev.DropClosed])
	}
}

// TestCloseInHandler closes the device from Poll's handler: Poll hands
// nothing more over, and the buffers are freed as it returns.
func TestCloseInHandler(t *testing.T) {
	a, b, _ := newPair(t, memring.Config{})
	for i := range 10 {
		xmit(t, a, uint32(i), 100, i < 9)
	}
	calls := 0
	n, err := b.Poll(64, func(x *skb.Buff) {
		calls++
		x.Free()
		if err := b.Close(); err != nil {
			t.Errorf("Close in the handler: %v", err)
		}
	})
	if n != 1 || calls != 1 || !errors.Is(err, netdev.ErrClosed) {
		t.Errorf("Poll closed by its handler returned %d, %v after %d calls; want 1, ErrClosed, 1", n, err, calls)
	}
	if st := b.Stats(); st.RxDropped[netdev.DropClosed] != 9 {
		t.Errorf("rx_dropped_closed %d; want the 9 packets never handed over", st.RxDropped[netdev.DropClosed])
	}
}

// TestOwnPool lets NewPair make the pool: it is closed with the second
// device, and a buffer still held then is reported.
func TestOwnPool(t *testing.T) {
	a, b, err := memring.NewPair(memring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	xmit(t, a, 1, 100, false)
	var held *skb.Buff
	b.Poll(1, func(x *skb.Buff) { held = x })
	if err := a.Close(); err != nil {
		t.Errorf("first Close: %v", err)
	}
	err = b.Close()
	if !errors.Is(err, pool.ErrLeak) {
		t.Errorf("second Close with a received buffer still held returned %v; want an error wrapping pool.ErrLeak", err)
	}
	held.Free()
	if err := pool.CheckLeaks(); err != nil {
		t.Errorf("after the held buffer was freed: %v", err)
	}
}

// TestWaitWakes blocks B's owner in Wait while A's goroutine sends: the
// doorbell wakes it, without polling in a loop.
func TestWaitWakes(t *testing.T) {
	a, b, _ := newPair(t, memring.Config{})
	var wg sync.WaitGroup
	const rounds = 200
	errc := make(chan error, 1)
	wg.Go(func() {
		for i := range rounds {
			if err := b.Wait(5 * time.Second); err != nil {
				errc <- fmt.Errorf("Wait in round %d: %w", i, err)
				return
			}
			if got := collect(t, b); len(got) != 1 || got[0] != uint32(i) {
				errc <- fmt.Errorf("round %d: received %v", i, got)
				return
			}
			errc <- nil
		}
	})
	for i := range rounds {
		xmit(t, a, uint32(i), 80, false)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestPayloadCheck(t *testing.T) {
	// A sanity check of the helpers the tests share.
	var p [8]byte
	netdevtest.PutPayload(p[:], 0x01020304)
	if binary.BigEndian.Uint32(p[:]) != 0x01020304 {
		t.Fatalf("PutPayload wrote % x", p)
	}
}

// TestNoHeadroom checks that netdev.NoHeadroom, which netdev.Config
// accepts, gives receive buffers with no headroom beyond the pool's.
func TestNoHeadroom(t *testing.T) {
	p := newPool(t, pool.Config{})
	a, b, err := memring.NewPair(memring.Config{Config: netdev.Config{Pool: p, Headroom: netdev.NoHeadroom, Copybreak: netdev.CopybreakOff}})
	if err != nil {
		t.Fatalf("NewPair with NoHeadroom: %v", err)
	}
	defer a.Close()
	defer b.Close()
	x, err := a.Cache().Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	x.Put(64)
	if err := a.Xmit(x, false); err != nil {
		t.Fatal(err)
	}
	n, err := b.Poll(8, func(y *skb.Buff) {
		if y.Headroom() != p.Headroom() {
			t.Errorf("received buffer with %d bytes of headroom, want the pool's %d", y.Headroom(), p.Headroom())
		}
		b.Cache().Free(y)
	})
	if n != 1 || err != nil {
		t.Fatalf("poll: %d, %v", n, err)
	}
}
