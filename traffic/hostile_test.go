package traffic

import (
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/skb"
)

// hostileFrame builds a 16-byte UDP request to port 9000 from f's
// defaults changed by change, then corrupts it with corrupt (nil: none).
func hostileFrame(t testing.TB, change func(*header.UDPFrame), corrupt func([]byte, *header.Frame)) []byte {
	t.Helper()
	u := labFrame("198.18.0.1", "198.18.0.2", 9000)
	if change != nil {
		change(u)
	}
	p := make([]byte, 64+16)
	f, err := header.BuildUDP(p, u)
	if err != nil {
		t.Fatal(err)
	}
	p = p[:f.End]
	if corrupt != nil {
		corrupt(p, &f)
	}
	return p
}

// TestLinkEchoRefusesHostile sends the link-layer echo requests a host's
// stack would not answer, or whose answer would come from a group address
// or carry a checksum made valid, one by one: each counts in Other, while
// a good request and one with a CHECKSUM_PARTIAL UDP checksum (a veth
// sender's, which a device without checksum states cannot mark) are
// answered.
func TestLinkEchoRefusesHostile(t *testing.T) {
	bcast4 := netip.MustParseAddr("255.255.255.255")
	cases := []struct {
		name    string
		change  func(*header.UDPFrame)
		corrupt func([]byte, *header.Frame)
		answer  bool
	}{
		{"good", nil, nil, true},
		{"partial checksum", func(u *header.UDPFrame) { u.PartialChecksum = true }, nil, true},
		{"ipv6", func(u *header.UDPFrame) {
			u.SourceIP, u.DestinationIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
		}, nil, true},
		{"to broadcast MAC", func(u *header.UDPFrame) { u.Destination = header.BroadcastMAC }, nil, false},
		{"from multicast MAC", func(u *header.UDPFrame) { u.Source = header.MAC{1, 0, 0x5e, 0, 0, 1} }, nil, false},
		{"from zero MAC", func(u *header.UDPFrame) { u.Source = header.MAC{} }, nil, false},
		{"from broadcast IP", func(u *header.UDPFrame) { u.SourceIP = bcast4 }, nil, false},
		{"to broadcast IP", func(u *header.UDPFrame) { u.DestinationIP = bcast4 }, nil, false},
		{"from multicast IP", func(u *header.UDPFrame) { u.SourceIP = netip.MustParseAddr("224.0.0.1") }, nil, false},
		{"to multicast IP", func(u *header.UDPFrame) { u.DestinationIP = netip.MustParseAddr("224.0.0.1") }, nil, false},
		{"from 0.0.0.0", func(u *header.UDPFrame) { u.SourceIP = netip.MustParseAddr("0.0.0.0") }, nil, false},
		{"from loopback", func(u *header.UDPFrame) { u.SourceIP = netip.MustParseAddr("127.0.0.1") }, nil, false},
		{"from ff02::1", func(u *header.UDPFrame) {
			u.SourceIP, u.DestinationIP = netip.MustParseAddr("ff02::1"), netip.MustParseAddr("2001:2::2")
		}, nil, false},
		{"from port 0", func(u *header.UDPFrame) { u.SourcePort = 0 }, nil, false},
		{"VLAN tagged", func(u *header.UDPFrame) { u.VLANProto, u.VLANTCI = header.EtherTypeVLAN, 99 }, nil, false},
		{"bad UDP checksum", nil, func(p []byte, f *header.Frame) { header.UDP(p[f.TransportOffset:]).SetChecksum(0xbeef) }, false},
		{"bad IPv4 checksum", nil, func(p []byte, f *header.Frame) { header.IPv4(p[f.NetworkOffset:]).SetChecksum(0xdead) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, memring.Config{})
			p := hostileFrame(t, tc.change, tc.corrupt)
			x, err := a.Cache().Alloc(len(p))
			if err != nil {
				t.Fatal(err)
			}
			copy(x.Put(len(p)), p)
			if err := a.Xmit(x, false); err != nil {
				t.Fatal(err)
			}
			r, err := Echo(context.Background(), b, EchoConfig{Link: true, Port: 9000, Idle: 30 * time.Millisecond, Duration: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]uint64{true: 1, false: 0}[tc.answer]; r.Echoed != want || r.Echoed+r.Other != 1 {
				t.Errorf("%+v; want %d echoed of 1", r, want)
			}
			drain := a.Cache()
			a.Poll(64, func(p *skb.Buff) { drain.Free(p) })
		})
	}
}

// TestToHost checks the link-layer destination filter of sinks and echo
// servers on a device that reports its MAC.
func TestToHost(t *testing.T) {
	own := header.MAC{2, 0, 0, 0, 0, 2}
	for _, tc := range []struct {
		name         string
		dst          header.MAC
		vlan         bool
		sink, answer bool
	}{
		{"own", own, false, true, true},
		{"another station's", header.MAC{2, 0, 0, 0, 0, 0x99}, false, false, false},
		{"broadcast", header.BroadcastMAC, false, true, false},
		{"multicast", header.MAC{1, 0, 0x5e, 0, 0, 1}, false, true, false},
		{"own, VLAN tagged", own, true, false, false},
	} {
		p := hostileFrame(t, func(u *header.UDPFrame) {
			u.Destination = tc.dst
			if tc.vlan {
				u.VLANProto, u.VLANTCI = header.EtherTypeVLAN, 99
			}
		}, nil)
		var f header.Frame
		if err := header.ParseFrameInto(p, &f); err != nil {
			t.Fatal(err)
		}
		if got := toHost(p, &f, own, true, true); got != tc.sink {
			t.Errorf("%s: sink takes it %v, want %v", tc.name, got, tc.sink)
		}
		if got := toHost(p, &f, own, true, false); got != tc.answer {
			t.Errorf("%s: echo takes it %v, want %v", tc.name, got, tc.answer)
		}
	}
}

// withDstOpts returns the IPv6 frame p, parsed as f, with a Destination
// Options header holding opts (padded by the caller to 8n-2 bytes)
// between its IPv6 header and its UDP header.
func withDstOpts(p []byte, f *header.Frame, opts []byte) []byte {
	return withExt(p, f, header.IPProtoDstOpts, append([]byte{0, byte((len(opts)+2)/8 - 1)}, opts...))
}

// withExt returns the IPv6 frame p, parsed as f, with the extension header
// ext of type typ (its Next Header byte filled in here) between its IPv6
// header and its UDP header.
func withExt(p []byte, f *header.Frame, typ uint8, ext []byte) []byte {
	n := f.NetworkOffset
	ext = append([]byte{p[n+6]}, ext[1:]...)
	out := append(append(append([]byte{}, p[:n+header.IPv6HeaderLen]...), ext...), p[n+header.IPv6HeaderLen:]...)
	ip := header.IPv6(out[n:])
	out[n+6] = typ
	binary.BigEndian.PutUint16(out[n+4:n+6], ip.PayloadLen()+uint16(len(ext)))
	return out
}

// TestLinkIPv6Options checks that link-layer sinks and echo servers take
// an IPv6 frame's extension headers as the host's stack does: an unknown
// option whose type says skip passes; one that says discard, PadN that is
// not padding, more than 8 options, a Router Alert of the wrong length, a
// Jumbo Payload or Home Address option, a Routing header the host would
// route on or drop, and an Authentication header make the frame other.
func TestLinkIPv6Options(t *testing.T) {
	opts := func(o ...byte) []byte { // a header of 8n bytes, for 8n-2 bytes of o
		return append([]byte{0, byte((len(o)+2)/8 - 1)}, o...)
	}
	addr := netip.MustParseAddr("2001:2::9").As16()
	route := func(typ, left uint8) []byte {
		return append([]byte{0, 2, typ, left, 0, 0, 0, 0}, addr[:]...)
	}
	var eight []byte // eight options of a skip type with 1 data byte, 24 bytes
	for range 8 {
		eight = append(eight, 0x1e, 1, 0)
	}
	nine := append(append([]byte{}, eight...), 0x1e, 1, 0, 1, 1, 0) // 30 bytes
	eight = append(eight, 1, 4, 0, 0, 0, 0)                         // PadN to 30
	const dst, hbh = header.IPProtoDstOpts, header.IPProtoHopByHop
	for _, tc := range []struct {
		name string
		typ  uint8 // the extension header's type
		ext  []byte
		ok   bool
	}{
		{"unknown, skip", dst, opts(0x3e, 4, 0, 0, 0, 0), true},
		{"padding", dst, opts(1, 4, 0, 0, 0, 0), true},
		{"unknown, discard", dst, opts(0x7e, 4, 0, 0, 0, 0), false},
		{"unknown, discard and ICMP", dst, opts(0xbe, 4, 0, 0, 0, 0), false},
		{"PadN not zero", dst, opts(1, 4, 0, 0, 1, 0), false},
		{"PadN of 6", dst, opts(1, 6, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0), false},
		{"eight options", dst, opts(eight...), true},
		{"nine options", dst, opts(nine...), false},
		{"nine options, hop-by-hop", hbh, opts(nine...), false},
		{"home address", dst, opts(append(append([]byte{0xc9, 16}, addr[:]...), 1, 2, 0, 0)...), false},
		{"home address, hop-by-hop", hbh, opts(1, 0, 0xc9, 2, 0, 0), false},
		{"router alert, hop-by-hop", hbh, opts(5, 2, 0, 0, 1, 0), true},
		{"router alert of 4, hop-by-hop", hbh, opts(5, 4, 0, 0, 0, 0), false},
		{"router alert of 4, destination options (unknown there: skipped)", dst, opts(5, 4, 0, 0, 0, 0), true},
		{"jumbo payload, hop-by-hop", hbh, opts(0xc2, 4, 0, 1, 0, 0), false},
		{"routing type 0, segments left 0", header.IPProtoRouting, route(0, 0), true},
		{"routing type 0, segments left 1", header.IPProtoRouting, route(0, 1), false},
		{"routing type 2, segments left 0", header.IPProtoRouting, route(2, 0), false},
		{"segment routing, segments left 0", header.IPProtoRouting, route(4, 0), false},
		{"authentication header", header.IPProtoAH, []byte{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, false},
		{"CALIPSO, hop-by-hop", hbh, opts(7, 8, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 0, 0), false},
		// IOAM at offset 42 of the IPv6 header, then at 44.
		{"IOAM misaligned, hop-by-hop", hbh, opts(0x31, 2, 0, 0, 1, 0), false},
		{"IOAM aligned, hop-by-hop", hbh, opts(1, 0, 0x31, 2, 0, 0), true},
	} {
		p := hostileFrame(t, func(u *header.UDPFrame) {
			u.SourceIP, u.DestinationIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
		}, nil)
		var f header.Frame
		if err := header.ParseFrameInto(p, &f); err != nil {
			t.Fatal(err)
		}
		typ := tc.typ
		p = withExt(p, &f, typ, tc.ext)
		if err := header.ParseFrameInto(p, &f); err != nil || f.Protocol != header.IPProtoUDP {
			t.Fatalf("%s: %v, protocol %d", tc.name, err, f.Protocol)
		}
		if err := f.VerifyChecksum(p); err != nil && typ != header.IPProtoRouting {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ipv6OptionsOK(p, &f); got != tc.ok {
			t.Errorf("%s: taken %v, want %v", tc.name, got, tc.ok)
		}
	}
	// A Routing header the host would take to a unicast address: not to
	// a multicast one.
	p := hostileFrame(t, func(u *header.UDPFrame) {
		u.SourceIP, u.DestinationIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("ff02::1")
	}, nil)
	var f header.Frame
	if err := header.ParseFrameInto(p, &f); err != nil {
		t.Fatal(err)
	}
	p = withExt(p, &f, header.IPProtoRouting, route(0, 0))
	if err := header.ParseFrameInto(p, &f); err != nil || ipv6OptionsOK(p, &f) {
		t.Errorf("a Routing header to a multicast address: %v, taken %v", err, ipv6OptionsOK(p, &f))
	}
}

// FuzzLinkFilters runs the link-layer sink's and echo server's filters
// (toHost, answerable, ipv6OptionsOK) and ParseStamp over any frame the
// header parser takes as UDP: none may panic (20 s ran clean, about a
// million inputs).
func FuzzLinkFilters(f *testing.F) {
	f.Add(hostileFrame(f, nil, nil))
	v6 := hostileFrame(f, func(u *header.UDPFrame) {
		u.SourceIP, u.DestinationIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
	}, nil)
	f.Add(v6)
	var fr header.Frame
	if err := header.ParseFrameInto(v6, &fr); err != nil {
		f.Fatal(err)
	}
	f.Add(withDstOpts(v6, &fr, []byte{0x3e, 4, 0, 0, 0, 0}))
	f.Add(withDstOpts(v6, &fr, []byte{1, 6, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}))
	// A frame whose payload holds a whole stamp, for ParseStamp's check.
	u := labFrame("198.18.0.1", "198.18.0.2", 9000)
	p := make([]byte, u.HeaderLen()+64)
	sf, err := header.BuildUDP(p, u)
	if err != nil {
		f.Fatal(err)
	}
	PutStamp(p[sf.PayloadOffset:], Stamp{Run: 7, Flow: 1, Seq: 100})
	f.Add(p)
	own := header.MAC{2, 0, 0, 0, 0, 2}
	f.Fuzz(func(t *testing.T, p []byte) {
		var fr header.Frame
		if err := header.ParseFrameInto(p, &fr); err != nil || fr.PayloadOffset == 0 || fr.Protocol != header.IPProtoUDP {
			return
		}
		toHost(p, &fr, own, true, true)
		toHost(p, &fr, header.MAC{}, false, false)
		answerable(p, &fr)
		ipv6OptionsOK(p, &fr)
		ParseStamp(p[fr.PayloadOffset:])
	})
}
