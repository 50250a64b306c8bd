//go:build linux

package afpacket

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// scapyBad are frames scapy crafts from A to B whose headers lie about
// their lengths or are cut short, one per line as a scapy expression over
// E (Ether from A to B), IPV4 (IP from A to B, with scapy's fields as
// arguments) and U (UDP to testPort). The
// receiving device must count each as malformed and deliver none of them.
var scapyBad = []string{
	`E/IPV4(len=1000)/U/Raw(b"bad")`,                                                           // IPv4 total length past the frame
	`E/IPV4(ihl=4)/U/Raw(b"bad")`,                                                              // IHL under 5 words
	`E/IPV4(ihl=15)/Raw(b"bad")`,                                                               // IHL past the frame
	`E/IPV4()/UDP(sport=1111,dport=9000,len=500)/Raw(b"bad")`,                                  // UDP length past the IP payload
	`E/IPV4()/UDP(sport=1111,dport=9000,len=4)/Raw(b"bad")`,                                    // UDP length under its header
	`E/IPV4(version=6)/U/Raw(b"bad")`,                                                          // an IPv6 version under the IPv4 EtherType
	`Ether(src=A_MAC,dst=B_MAC,type=0x0800)/Raw(b"\x45\x00")`,                                  // IPv4 header cut short
	`E/IPV4(proto=17)/Raw(b"\x23\x28")`,                                                        // UDP header cut short
	`Ether(src=A_MAC,dst=B_MAC)/IPv6(src="2001:2::1",dst="2001:2::2",plen=1000)/U/Raw(b"bad")`, // IPv6 payload length past the frame
	`Ether(src=A_MAC,dst=B_MAC)/Dot1Q(vlan=5,type=0x0800)/Raw(b"\x45\x00")`,                    // VLAN tag, then 2 bytes of an IPv4 header (the kernel drops a tag with under 2 bytes after it)
}

// TestScapyMalformed has scapy, an independent packet crafter, send frames
// whose headers are malformed in the ways scapyBad lists, each followed by
// a good UDP frame, from A to an AF_PACKET device in B that drops malformed
// frames. The device must deliver every good frame and no bad one, and by
// the time it hands over the good frame after bad frame i it must have
// counted i+1 frames in rx_dropped_malformed; nothing may panic or leak.
func TestScapyMalformed(t *testing.T) {
	py := labtest.ScapyPython(t)
	l := newLab(t)
	d := openIn(t, &l.B, Config{DropMalformed: true})

	var sb strings.Builder
	fmt.Fprintf(&sb, "from scapy.all import *\nconf.verb = 0\nA_MAC, B_MAC = %q, %q\n", lab.MACA.String(), lab.MACB.String())
	fmt.Fprintf(&sb, "E = Ether(src=A_MAC, dst=B_MAC)\ndef IPV4(**kw): return IP(src=%q, dst=%q, **kw)\nU = UDP(sport=1111, dport=%d)\n", l.A.Addr.String(), l.B.Addr.String(), testPort)
	sb.WriteString("frames = []\n")
	for i, bad := range scapyBad {
		fmt.Fprintf(&sb, "frames.append(%s)\n", bad)
		fmt.Fprintf(&sb, "frames.append(E/IPV4()/U/Raw(bytes([0, 0, 0, %d]) + b'good'))\n", i)
	}
	fmt.Fprintf(&sb, "sendp(frames, iface=%q)\n", l.A.Ifname)
	base := d.Stats().RxDropped[netdev.DropMalformed]

	if out, err := l.A.Cmd(py, "-c", sb.String()).CombinedOutput(); err != nil {
		t.Fatalf("scapy: %v\n%s\nscript:\n%s", err, out, sb.String())
	}
	counted := map[uint32]uint64{} // good frame i -> malformed frames counted before it
	got := collect(t, d, len(scapyBad), 5*time.Second, func(b *skb.Buff, seq uint32, payload int) {
		if payload != 8 || string(b.Data()[b.Len()-4:]) != "good" {
			t.Errorf("delivered a frame that is not a good one: % x", b.Data())
		}
		counted[seq] = d.Stats().RxDropped[netdev.DropMalformed] - base
	})
	if got != len(scapyBad) {
		t.Errorf("delivered %d good frames, want %d", got, len(scapyBad))
	}
	for i, bad := range scapyBad {
		if n, ok := counted[uint32(i)]; ok && n != uint64(i+1) {
			t.Errorf("after %s: %d malformed frames counted, want %d", bad, n, i+1)
			break
		}
	}
}
