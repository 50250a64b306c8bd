//go:build linux

package afpacket

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// FuzzFrame feeds the receive path one ring frame built from arbitrary wire
// bytes and header fields (status bits, VLAN tag, snap and wire lengths,
// packet type), without a socket. It checks that nothing panics, that a
// delivered buffer holds exactly the frame (with the VLAN tag put back), that
// its header offsets agree with header.ParseFrame, that drops are counted,
// and that no buffer leaks.
func FuzzFrame(f *testing.F) {
	l := &framer{uf: header.UDPFrame{
		Source: header.MAC{2, 0, 0, 0, 0, 1}, Destination: header.MAC{2, 0, 0, 0, 0, 2},
		SourceIP: netip.MustParseAddr("198.18.0.1"), DestinationIP: netip.MustParseAddr("198.18.0.2"),
		SourcePort: 1, DestinationPort: testPort,
	}}
	udp := make([]byte, l.uf.HeaderLen()+40)
	if _, err := header.BuildUDP(udp, &l.uf); err != nil {
		f.Fatal(err)
	}
	f.Add(udp, uint32(0), uint16(0), uint8(0), uint16(0), []byte(nil))
	f.Add(udp, uint32(unix.TP_STATUS_VLAN_VALID|unix.TP_STATUS_VLAN_TPID_VALID), uint16(0x2123), uint8(0), uint16(0), []byte(nil))
	f.Add(udp, uint32(unix.TP_STATUS_CSUMNOTREADY), uint16(0), uint8(0), uint16(0), []byte(nil))
	f.Add(udp, uint32(0), uint16(0), uint8(unix.PACKET_OUTGOING), uint16(0), []byte(nil))
	f.Add(udp, uint32(0), uint16(0), uint8(0), uint16(30), []byte(nil)) // cut by the snap length
	f.Add(udp[:10], uint32(unix.TP_STATUS_VLAN_VALID), uint16(1), uint8(0), uint16(0), []byte(nil))
	f.Add(make([]byte, 1500), uint32(0), uint16(0), uint8(0), uint16(0), []byte(nil))
	// A virtio header describing a UDP GSO super-frame of 8-byte segments,
	// its checksum at the UDP header.
	f.Add(udp, uint32(0), uint16(0), uint8(0), uint16(0), []byte{vnetNeedsCsum, vnetGSOUDPL4, 0, 0, 8, 0, 14 + 20, 0, 6, 0})

	p, err := pool.New(pool.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := p.Close(); err != nil {
			f.Errorf("pool: %v", err)
		}
	})
	f.Fuzz(func(t *testing.T, wire []byte, status uint32, tci uint16, pkttype uint8, cut uint16, vnet []byte) {
		if len(wire) > 9000 {
			return
		}
		c := p.NewCache()
		defer c.Close()
		for k, cb := range []int{0, netdev.DefaultCopybreak, netdev.DefaultCopybreak} {
			d := &Device{cache: c, cbreak: cb, fullSize: pool.FrameSize - c.Headroom()}
			// The third pass reads a virtio header (Config.VnetHdr): vnet's
			// first bytes, in the 10 before the frame.
			d.cfg.VnetHdr = k == 2
			// A block holding one frame: the descriptor, the header at 64,
			// the frame at 64+mac.
			const off, mac = 64, 80
			blk := make([]byte, off+mac+len(wire)+16)
			snap := len(wire)
			if int(cut) < snap {
				snap = int(cut)
			}
			hdr := blk[off:]
			ne.PutUint32(hdr[hSnaplen:], uint32(snap))
			ne.PutUint32(hdr[hLen:], uint32(len(wire)))
			ne.PutUint16(hdr[hMac:], mac)
			ne.PutUint32(hdr[hStatus:], status)
			ne.PutUint32(hdr[hVlanTCI:], uint32(tci))
			blk[off+sllPkttype] = pkttype
			copy(blk[off+mac:], wire)
			if d.cfg.VnetHdr {
				copy(blk[off+mac-vnetHdrLen:off+mac], vnet)
			}
			got, res := d.frame(blk, off)
			s := d.ctr.Snapshot()
			switch {
			case pkttype == unix.PACKET_OUTGOING:
				if res != skippedOutgoing || got != nil {
					t.Fatalf("outgoing frame: result %d", res)
				}
				continue
			case snap < len(wire):
				if res != dropped || got != nil || s.RxTruncated != 1 {
					t.Fatalf("cut frame: result %d, truncated %d", res, s.RxTruncated)
				}
				continue
			}
			if got == nil {
				t.Fatalf("frame of %d bytes not delivered (result %d, stats %+v)", len(wire), res, s)
			}
			want := wire
			if status&unix.TP_STATUS_VLAN_VALID != 0 && len(wire) >= 12 {
				want = make([]byte, 0, len(wire)+4)
				want = append(want, wire[:12]...)
				tpid := uint16(header.EtherTypeVLAN)
				want = binary.BigEndian.AppendUint16(want, tpid)
				want = binary.BigEndian.AppendUint16(want, tci)
				want = append(want, wire[12:]...)
			}
			if !bytes.Equal(got.Data(), want) {
				t.Fatalf("delivered % x, want % x", got.Data(), want)
			}
			fr, perr := header.ParseFrame(want)
			if (perr != nil) != (res == deliveredUnparsed) {
				t.Fatalf("parse error %v but result %d", perr, res)
			}
			if fr.NetworkOffset != 0 && (got.NetworkOffset() != fr.NetworkOffset || got.Protocol() != fr.EtherType) {
				t.Fatalf("network offset %d protocol %#x, parser says %d %#x", got.NetworkOffset(), got.Protocol(), fr.NetworkOffset, fr.EtherType)
			}
			if got.MacOffset() != 0 || got.Headroom() < c.Headroom() {
				t.Fatalf("mac offset %d headroom %d", got.MacOffset(), got.Headroom())
			}
			if got.IPSummed() == skb.ChecksumPartial && got.CsumStart() != fr.TransportOffset {
				t.Fatalf("csum start %d, transport at %d", got.CsumStart(), fr.TransportOffset)
			}
			if g := got.GSOSize(); g != 0 && (!d.cfg.VnetHdr || fr.PayloadOffset == 0 ||
				got.GSOSegs()*g < len(want)-fr.PayloadOffset || (got.GSOSegs()-1)*g >= len(want)-fr.PayloadOffset) {
				t.Fatalf("gso_size %d gso_segs %d on a frame of %d bytes, payload at %d (vnet %v)", g, got.GSOSegs(), len(want), fr.PayloadOffset, d.cfg.VnetHdr)
			}
			if cb != 0 && len(want) < cb && got.End() > pool.SmallSize {
				t.Fatalf("%d-byte frame in a %d-byte block with copybreak %d", len(want), got.End(), cb)
			}
			c.Free(got)
		}
	})
}
