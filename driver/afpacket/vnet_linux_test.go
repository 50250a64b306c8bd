//go:build linux

package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/internal/mmsg"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// TestVnetHdrGSO captures with the device in B what a kernel UDP socket in
// A sends with UDP_SEGMENT: the veth hands the super-packet over whole, and
// with VnetHdr the buffer carries its GSO size, segment count and type;
// without it, the same frame is one plain frame. A datagram sent without
// GSO is plain either way.
func TestVnetHdrGSO(t *testing.T) {
	for _, vnet := range []bool{true, false} {
		t.Run(map[bool]string{true: "vnet", false: "plain"}[vnet], func(t *testing.T) {
			l := newLab(t)
			rx := openIn(t, &l.B, Config{VnetHdr: vnet})
			if rx.GSOFrames() != vnet {
				t.Fatalf("GSOFrames %v with VnetHdr %v", rx.GSOFrames(), vnet)
			}
			conn := listenIn(t, &l.A, 0)
			const seg, segs = 100, 10
			msg := make([]byte, seg*segs-30) // the last segment is 70 bytes
			dst := netip.AddrPortFrom(l.B.Addr, testPort)
			if _, _, err := conn.WriteMsgUDPAddrPort(msg, gsoCmsg(seg), dst); err != nil {
				labtest.SkipOrFail(t, fmt.Sprintf("the kernel refused a UDP_SEGMENT send: %v", err))
			}
			binary.BigEndian.PutUint32(msg, 1)
			if _, err := conn.WriteToUDPAddrPort(msg[:seg], dst); err != nil {
				t.Fatal(err)
			}
			var frames []struct {
				payload, size, segs int
				typ                 skb.GSOType
			}
			got := collect(t, rx, 2, 3*time.Second, func(b *skb.Buff, seq uint32, payload int) {
				frames = append(frames, struct {
					payload, size, segs int
					typ                 skb.GSOType
				}{payload, b.GSOSize(), b.GSOSegs(), b.GSOType()})
			})
			if got != 2 {
				t.Fatalf("captured %d of 2 frames", got)
			}
			super, plain := frames[0], frames[1]
			if super.payload != len(msg) || plain.payload != seg || plain.size != 0 || plain.segs != 0 {
				t.Fatalf("frames %+v", frames)
			}
			if vnet && (super.size != seg || super.segs != segs || super.typ != skb.GSOUDPL4) {
				t.Errorf("super-frame of %d bytes: gso_size %d gso_segs %d type %v", super.payload, super.size, super.segs, super.typ)
			}
			if !vnet && super.size != 0 {
				t.Errorf("without VnetHdr: gso_size %d", super.size)
			}
			// The super-frame counts as its segments (netdev.Stats),
			// beside the plain one (and any ARP frame).
			if st := rx.Stats(); vnet && st.RxPackets < segs+1 {
				t.Errorf("rx_packets %d after a super-frame of %d segments and a plain frame; want %d or more", st.RxPackets, segs, segs+1)
			}
		})
	}
}

// gsoCmsg is a UDP_SEGMENT control message asking for segments of seg
// bytes (udp(7)).
func gsoCmsg(seg int) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	return b[:mmsg.PutCmsgUint16(b, unix.SOL_UDP, unix.UDP_SEGMENT, uint16(seg))]
}

// TestVnetHdrXmit sends frames with VnetHdr on, in both transmit modes, to
// a plain UDP socket in B: the header Xmit writes asks for nothing, and
// the kernel takes the frame after it as it is.
func TestVnetHdrXmit(t *testing.T) {
	for _, mode := range []TxMode{TxMmsg, TxRing} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLab(t)
			fr := newFramer(l)
			conn := listenIn(t, &l.B, testPort)
			tx := openIn(t, &l.A, Config{TxMode: mode, VnetHdr: true})
			const n = 30
			sendN(t, tx, fr, 0, n, 100, 8)
			// A clone shares its head: Xmit unshares it before writing the
			// header in front of the frame.
			b, err := tx.Cache().Alloc(fr.uf.HeaderLen() + 100)
			if err != nil {
				t.Fatal(err)
			}
			fr.fill(b, n, 100)
			c := tx.Cache().Clone(b)
			if err := tx.Xmit(c, false); err != nil {
				t.Fatal(err)
			}
			if _, ok := checkFrame(b, n); !ok {
				t.Errorf("the original of a clone sent changed: % x", b.Data()[:16])
			}
			if err := tx.Xmit(b, false); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 2048)
			count := map[uint32]int{}
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			for k := 0; k < n+2; k++ {
				m, _, err := conn.ReadFromUDPAddrPort(buf)
				if err != nil {
					t.Fatalf("after %d datagrams: %v", k, err)
				}
				if m != 100 {
					t.Fatalf("datagram of %d bytes", m)
				}
				count[binary.BigEndian.Uint32(buf)]++
			}
			if len(count) != n+1 || count[n] != 2 {
				t.Errorf("datagrams by seq: %v", count)
			}
		})
	}
}

// checkFrame reports whether b still holds the test frame of seq.
func checkFrame(b *skb.Buff, seq uint32) (uint32, bool) {
	s, _, ok := seqOf(b)
	return s, ok && s == seq
}

// TestVnetGSOTypes checks vnetGSO against frames it parsed: a header's GSO
// type is taken only when it matches the frame's protocols and its
// checksum starts at the frame's transport header, as a tunnel's inner TCP
// or UDP, which the kernel names with the outer frame's type, would not.
func TestVnetGSOTypes(t *testing.T) {
	p, err := pool.New(pool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := p.NewCache()
	defer c.Close()
	uf := header.UDPFrame{SourceIP: netip.MustParseAddr("198.18.0.1"), DestinationIP: netip.MustParseAddr("198.18.0.2"),
		SourcePort: 1, DestinationPort: 2}
	const (
		outer = 14 + 20 // the UDP header's offset in the frame
		inner = 100     // a tunnel's inner transport header
	)
	for _, tc := range []struct {
		gsoType   byte
		size      int
		csumStart int // 0: no NEEDS_CSUM
		tagLen    int
		wantSize  int
		wantSegs  int
		wantType  skb.GSOType
	}{
		{vnetGSOUDPL4, 100, 0, 0, 100, 4, skb.GSOUDPL4},
		{vnetGSOUDPL4, 100, outer, 0, 100, 4, skb.GSOUDPL4},
		{vnetGSOUDPL4, 100, outer - 4, 4, 100, 4, skb.GSOUDPL4}, // a VLAN tag put back
		{vnetGSOUDPL4, 100, inner, 0, 0, 0, 0},                  // UDP in a UDP tunnel
		{vnetGSOUDPL4, 0, 0, 0, 0, 0, 0},
		{vnetGSOTCPv4, 100, 0, 0, 0, 0, 0}, // TCP over a UDP frame: a tunnel
		{vnetGSOTCPv6, 100, 0, 0, 0, 0, 0},
		{3, 100, 0, 0, 0, 0, 0}, // UFO
		{0, 100, 0, 0, 0, 0, 0},
	} {
		b, err := c.Alloc(uf.HeaderLen() + 350)
		if err != nil {
			t.Fatal(err)
		}
		f, err := header.BuildUDP(b.Put(uf.HeaderLen()+350), &uf)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]byte, vnetHdrLen)
		v[vnetGSOType] = tc.gsoType
		ne.PutUint16(v[vnetGSOSize:], uint16(tc.size))
		if tc.csumStart != 0 {
			v[vnetFlags] = vnetNeedsCsum
			ne.PutUint16(v[vnetCsumStart:], uint16(tc.csumStart))
		}
		(&Device{}).vnetGSO(b, v, &f, tc.tagLen)
		if b.GSOSize() != tc.wantSize || b.GSOSegs() != tc.wantSegs || b.GSOType() != tc.wantType {
			t.Errorf("gso_type %d size %d csum_start %d: got size %d segs %d type %v", tc.gsoType, tc.size, tc.csumStart, b.GSOSize(), b.GSOSegs(), b.GSOType())
		}
		c.Free(b)
	}
}

// TestVnetHdrNoBuffer: a clone sent with the virtio header needs a head of
// its own, and with the pool exhausted Xmit drops it, counts it in
// tx_dropped_nobuf and returns its prefixed error, the same one each time
// (made at Open: a drop allocates nothing).
func TestVnetHdrNoBuffer(t *testing.T) {
	l := newLab(t)
	fr := newFramer(l)
	p, err := pool.New(pool.Config{Classes: []pool.Class{{Size: 2048, Max: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tx := openIn(t, &l.A, Config{Config: netdev.Config{Pool: p}, TxOnly: true, VnetHdr: true})
	c := tx.Cache()
	var held []*skb.Buff
	for {
		b, err := c.Alloc(fr.uf.HeaderLen() + 100)
		if err != nil {
			break
		}
		held = append(held, b)
	}
	if len(held) == 0 {
		t.Fatal("no buffer at all")
	}
	fr.fill(held[0], 1, 100)
	var errs []error
	for range 2 {
		err := tx.Xmit(c.Clone(held[0]), false)
		if !errors.Is(err, pool.ErrExhausted) || !strings.HasPrefix(fmt.Sprint(err), "afpacket: xmit "+l.A.Ifname+": ") {
			t.Fatalf("Xmit of a clone, pool exhausted: %v", err)
		}
		errs = append(errs, err)
	}
	if errs[0] != errs[1] {
		t.Error("two drops returned two errors: one was made for the drop")
	}
	if st := tx.Stats(); st.TxDropped[netdev.DropNoBuffer] != 2 {
		t.Errorf("tx_dropped_nobuf %d, want 2", st.TxDropped[netdev.DropNoBuffer])
	}
	c.FreeN(held)
}
