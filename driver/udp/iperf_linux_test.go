//go:build linux

package udp

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/skb"
)

// iperf3's control protocol (iperf_api.h): one signed byte per state
// change, JSON messages behind a 4-byte big-endian length, a 37-byte cookie
// first, and for UDP a 4-byte hello from the client on the data path that
// the server answers (both written as native ints).
const (
	ipTestStart       = 1
	ipTestRunning     = 2
	ipTestEnd         = 4
	ipParamExchange   = 9
	ipCreateStreams   = 10
	ipExchangeResults = 13
	ipDisplayResults  = 14
	ipDone            = 16
	ipCookieLen       = 37
	ipUDPConnectMsg   = 0x36373839
	ipUDPConnectReply = 0x39383736
)

// TestIperf3 runs the iperf3 client (a UDP peer no one here wrote) against
// a device playing iperf3's server: forward, the client sends and the
// device receives and checks iperf3's sequence numbers; reverse (-R), the
// device sends, with GSO, and iperf3 counts loss and reordering.
func TestIperf3(t *testing.T) {
	labtest.RequireTool(t, "iperf3", "iperf3")
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			testIperf3(t, reverse)
		})
	}
}

type iperfParams struct {
	UDP          bool `json:"udp"`
	Len          int  `json:"len"`
	Reverse      bool `json:"reverse"`
	Counters64   int  `json:"udp_counters_64bit"`
	Parallel     int  `json:"parallel"`
	PacingTimer  int  `json:"pacing_timer"`
	Bandwidth    int  `json:"bandwidth"`
	GetServerOut int  `json:"get_server_output"`
}

type iperfStream struct {
	ID          int     `json:"id"`
	Bytes       int64   `json:"bytes"`
	Retransmits float64 `json:"retransmits"`
	Jitter      float64 `json:"jitter"`
	Errors      int64   `json:"errors"`
	Packets     int64   `json:"packets"`
	StartTime   float64 `json:"start_time"`
	EndTime     float64 `json:"end_time"`
}

type iperfResults struct {
	CPUTotal       float64       `json:"cpu_util_total"`
	CPUUser        float64       `json:"cpu_util_user"`
	CPUSystem      float64       `json:"cpu_util_system"`
	HasRetransmits float64       `json:"sender_has_retransmits"`
	Streams        []iperfStream `json:"streams"`
}

func testIperf3(t *testing.T, reverse bool) {
	ln, err := net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(lo4))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).AddrPort().Port()
	// The data path is UDP on the same port number.
	d := openT(t, Config{Local: netip.AddrPortFrom(lo4.Addr(), port), GSO: true, RcvBuf: 4 << 20})

	const payload = 1200
	args := []string{"-c", "127.0.0.1", "-p", fmt.Sprint(port), "-u", "-t", "1", "-l", fmt.Sprint(payload), "-b", "200M", "-w", "4M", "-J"}
	if reverse {
		args = append(args, "-R")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "iperf3", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()

	ln.SetDeadline(time.Now().Add(10 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	ctrl := &iperfCtrl{t: t, c: conn}
	ctrl.read(make([]byte, ipCookieLen))
	ctrl.state(ipParamExchange)
	var params iperfParams
	ctrl.readJSON(&params)
	if !params.UDP || params.Len != payload || params.Reverse != reverse {
		t.Fatalf("iperf3 asked for %+v", params)
	}
	ctrl.state(ipCreateStreams)

	// The client's hello on the data path tells the device where it is.
	var client netip.AddrPort
	for deadline := time.Now().Add(5 * time.Second); !client.IsValid() && time.Now().Before(deadline); {
		d.Wait(100 * time.Millisecond)
		d.Poll(1, func(b *skb.Buff) {
			if b.Len() == 4 && binary.NativeEndian.Uint32(b.Data()) == ipUDPConnectMsg {
				client = d.Src()
			}
			d.Cache().Free(b)
		})
	}
	if !client.IsValid() {
		t.Fatalf("no UDP hello from iperf3: %s", out.String())
	}
	reply, _ := d.Cache().Alloc(4)
	binary.NativeEndian.PutUint32(reply.Put(4), ipUDPConnectReply)
	if err := d.XmitTo(reply, client, false); err != nil {
		t.Fatal(err)
	}
	ctrl.state(ipTestStart)
	ctrl.state(ipTestRunning)

	// The client ends the test (TEST_END) after its one second.
	ended := make(chan struct{})
	go func() {
		var b [1]byte
		if _, err := io.ReadFull(conn, b[:]); err == nil && b[0] == ipTestEnd {
			close(ended)
		}
	}()
	hdr := 12
	if params.Counters64 != 0 {
		hdr = 16
	}
	var packets, errs int64
	if reverse {
		packets = iperfSend(t, d, client, payload, hdr, ended)
	} else {
		packets, errs = iperfRecv(t, d, hdr, ended)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("iperf3 did not end the test")
	}

	ctrl.state(ipExchangeResults)
	var theirs iperfResults
	ctrl.readJSON(&theirs)
	ours := iperfResults{Streams: []iperfStream{{ID: 1, Bytes: packets * payload, Errors: errs, Packets: packets, EndTime: 1}}}
	if len(theirs.Streams) == 1 {
		ours.Streams[0].ID = theirs.Streams[0].ID
	}
	ctrl.writeJSON(ours)
	ctrl.state(ipDisplayResults)
	var done [1]byte
	ctrl.read(done[:])
	if err := cmd.Wait(); err != nil || done[0] != ipDone {
		t.Fatalf("iperf3: %v (last state %d): %s", err, done[0], out.String())
	}

	var res struct {
		End struct {
			Sum struct {
				Packets    int64 `json:"packets"`
				Lost       int64 `json:"lost_packets"`
				OutOfOrder int64 `json:"out_of_order"`
			} `json:"sum"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Error != "" {
		t.Fatalf("iperf3 output: %v: %s", err, out.String())
	}
	s := res.End.Sum
	t.Logf("iperf3: packets %d lost %d out of order %d; device: packets %d errors %d; %+v",
		s.Packets, s.Lost, s.OutOfOrder, packets, errs, d.Stats())
	if reverse {
		// iperf3 received what the device sent, in order.
		if s.Lost != 0 || s.OutOfOrder != 0 || s.Packets != packets || packets == 0 {
			t.Errorf("iperf3 counted %d packets, %d lost, %d out of order; the device sent %d", s.Packets, s.Lost, s.OutOfOrder, packets)
		}
		return
	}
	// The device received, in order, every datagram iperf3 sent.
	if theirs.Streams == nil || theirs.Streams[0].Packets != packets || errs != 0 || packets == 0 {
		t.Errorf("iperf3 sent %+v; the device received %d with %d missing or out of order", theirs.Streams, packets, errs)
	}
}

// iperfSend sends iperf3 datagrams (seconds, microseconds, sequence number
// from 1, big-endian) to client in GSO bursts of 64 until the client ends
// the test or a bound is reached, pacing so that its socket keeps up. It
// returns how many it sent.
func iperfSend(t *testing.T, d *Device, client netip.AddrPort, payload, hdr int, ended chan struct{}) int64 {
	var seq int64
	for seq < 20000 {
		select {
		case <-ended:
			return seq
		default:
		}
		for i := range 64 {
			b, err := d.Cache().Alloc(payload)
			if err != nil {
				t.Fatal(err)
			}
			p := b.Put(payload)
			clear(p[hdr:])
			now := time.Now()
			binary.BigEndian.PutUint32(p[0:], uint32(now.Unix()))
			binary.BigEndian.PutUint32(p[4:], uint32(now.Nanosecond()/1000))
			seq++
			if hdr == 16 {
				binary.BigEndian.PutUint64(p[8:], uint64(seq))
			} else {
				binary.BigEndian.PutUint32(p[8:], uint32(seq))
			}
			if err := d.XmitTo(b, client, i < 63); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return seq
}

// iperfRecv receives iperf3 datagrams until the client ends the test and the
// socket is quiet, and returns how many arrived and how many sequence numbers
// were missing or out of order.
func iperfRecv(t *testing.T, d *Device, hdr int, ended chan struct{}) (packets, errs int64) {
	var next int64 = 1
	h := func(b *skb.Buff) {
		defer d.Cache().Free(b)
		p := b.Data()
		if len(p) < hdr {
			errs++
			return
		}
		var seq int64
		if hdr == 16 {
			seq = int64(binary.BigEndian.Uint64(p[8:]))
		} else {
			seq = int64(binary.BigEndian.Uint32(p[8:]))
		}
		if seq != next {
			errs++
		}
		next = seq + 1
		packets++
	}
	quietSince := time.Time{}
	for {
		d.Wait(20 * time.Millisecond)
		n, err := d.Poll(64, h)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ended:
			if n > 0 || quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) > 100*time.Millisecond {
				return packets, errs
			}
		default:
		}
	}
}

// iperfCtrl is the server's end of the control connection.
type iperfCtrl struct {
	t *testing.T
	c net.Conn
}

func (c *iperfCtrl) read(p []byte) {
	c.t.Helper()
	if _, err := io.ReadFull(c.c, p); err != nil {
		c.t.Fatalf("iperf3 control: %v", err)
	}
}

func (c *iperfCtrl) state(s byte) {
	c.t.Helper()
	if _, err := c.c.Write([]byte{s}); err != nil {
		c.t.Fatalf("iperf3 control: state %d: %v", s, err)
	}
}

func (c *iperfCtrl) readJSON(v any) {
	c.t.Helper()
	var n [4]byte
	c.read(n[:])
	p := make([]byte, binary.BigEndian.Uint32(n[:]))
	c.read(p)
	if err := json.Unmarshal(p, v); err != nil {
		c.t.Fatalf("iperf3 control: %v: %s", err, p)
	}
}

func (c *iperfCtrl) writeJSON(v any) {
	c.t.Helper()
	p, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	if _, err := c.c.Write(append(msg, p...)); err != nil {
		c.t.Fatalf("iperf3 control: %v", err)
	}
}
