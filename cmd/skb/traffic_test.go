package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/driver/udp"
	"github.com/skbdev/skb/internal/icmptest"
	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/traffic"
)

// freePorts returns the first of n consecutive UDP ports free on 127.0.0.1,
// drawn below the kernel's ephemeral range (ip_local_port_range, ip-sysctl):
// a socket another test binds to port 0 between this check and the run
// cannot take one of them.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v-n > 10000 {
				low = v
			}
		}
	}
	for range 50 {
		base := 10000 + rand.IntN(low-n-10000)
		conns := make([]net.PacketConn, 0, n)
		for i := range n {
			c, err := net.ListenPacket("udp4", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
		if len(conns) == n {
			return base
		}
	}
	t.Fatalf("no %d consecutive free UDP ports below %d", n, low)
	return 0
}

// bg is a command running in the background.
type bg struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer // read while the command writes
	done           chan error
}

func startBg(t *testing.T, cmd *exec.Cmd) *bg {
	t.Helper()
	b := &bg{cmd: cmd, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &b.stdout, &b.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-b.done
		b.done <- nil
	})
	return b
}

// bound waits until the command has a UDP socket bound to addr's port in
// its network namespace (its /proc/PID/net/udp or udp6, proc(5)): a
// server or sink that has bound it is ready for traffic. It fails the
// test when the command exits first or 5 s pass.
func (b *bg) bound(t *testing.T, addr string) {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	local := fmt.Sprintf(":%04X ", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, f := range []string{"udp", "udp6"} {
			tab, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", b.cmd.Process.Pid, f))
			for _, line := range strings.Split(string(tab), "\n")[1:] {
				if fs := strings.Fields(line); len(fs) > 1 && strings.HasSuffix(fs[1]+" ", local) {
					return
				}
			}
		}
		select {
		case err := <-b.done:
			b.done <- err
			t.Fatalf("%v exited before binding %s: %v\nstderr: %s", b.cmd.Args, addr, err, b.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v did not bind %s in 10s\nstderr: %s", b.cmd.Args, addr, b.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// printed waits until the command's stdout holds want, and fails the
// test when the command exits first or 10 s pass.
func (b *bg) printed(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.stdout.String(), want); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-b.done:
			b.done <- err
			if strings.Contains(b.stdout.String(), want) {
				return // printed, then exited
			}
			t.Fatalf("%v exited before printing %q: %v\nstderr: %s", b.cmd.Args, want, err, b.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v did not print %q in 10s\nstderr: %s", b.cmd.Args, want, b.stderr.String())
		}
	}
}

// wait waits for the command to exit and returns its stdout.
func (b *bg) wait(t *testing.T) string {
	t.Helper()
	select {
	case err := <-b.done:
		b.done <- err
		if err != nil {
			t.Fatalf("%v: %v\nstderr: %s\nstdout: %s", b.cmd.Args, err, b.stderr.String(), b.stdout.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%v did not exit", b.cmd.Args)
	}
	return b.stdout.String()
}

// ndjson parses NDJSON output: every line one object, the last the result.
func ndjson(t *testing.T, out string) (intervals []map[string]any, result map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not NDJSON: %q: %v", sc.Text(), err)
		}
		switch m["type"] {
		case "interval":
			if result != nil {
				t.Fatalf("interval after the result: %s", out)
			}
			intervals = append(intervals, m)
		case "result":
			if result != nil {
				t.Fatalf("two results: %s", out)
			}
			result = m
		default:
			t.Fatalf("object without a known type: %q", sc.Text())
		}
	}
	if result == nil {
		t.Fatalf("no result object in %q", out)
	}
	return intervals, result
}

// requireFields checks that obj has every field, as a number.
func requireFields(t *testing.T, what string, obj map[string]any, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if _, ok := obj[f].(float64); !ok {
			t.Errorf("%s: field %q missing or not a number in %v", what, f, obj)
		}
	}
}

var (
	pktgenFields   = []string{"packets", "bytes", "seconds", "pps", "mbps", "errors", "doorbells"}
	sinkFields     = []string{"packets", "pps", "mbps", "lost", "reordered", "kernel_drops"}
	pingpongFields = []string{"iters", "bytes", "seconds", "mbps", "usec_per_iter", "p50_us", "p99_us", "p999_us", "lost", "late", "stray"}
)

func num(m map[string]any, k string) uint64 { v, _ := m[k].(float64); return uint64(v) }

func TestPktgenSinkJSON(t *testing.T) {
	tests := []struct {
		name      string
		flows     int
		pktgen    []string
		sink      []string
		count     uint64
		doorbells uint64
	}{
		{"burst 1", 1, []string{"-n", "2000", "-r", "20000"}, nil, 2000, 2000},
		{"burst 64", 1, []string{"-n", "3200", "-r", "40000", "-b", "64"}, nil, 3200, 50},
		{"gso gro", 1, []string{"-n", "6400", "-r", "100000", "--gso"}, []string{"--gro"}, 6400, 100},
		{"4 flows", 4, []string{"-n", "2000", "-r", "20000", "-b", "8", "--flows", "4"}, []string{"--flows", "4"}, 2000, 250},
		{"imix", 1, []string{"-n", "1200", "-r", "20000", "--imix", "imix"}, []string{"--copybreak", "0"}, 1200, 1200},
		{"sink waits", 1, []string{"-n", "2000", "-r", "20000", "-b", "4"}, []string{"--sleep", "0"}, 2000, 500},
		{"sink spins", 1, []string{"-n", "2000", "-r", "20000", "-b", "4"}, []string{"--spin"}, 2000, 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			port := freePorts(t, tc.flows)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			sink := startBg(t, exec.Command(buildSkb(t), append([]string{"sink", "--json", "--listen", addr,
				"-n", strconv.FormatUint(tc.count, 10), "-t", "10s"}, tc.sink...)...))
			sink.bound(t, addr)
			out := mustSkb(t, append([]string{"pktgen", "--json", "--dst", addr, "-t", "10s"}, tc.pktgen...)...)
			_, gr := ndjson(t, out)
			_, sr := ndjson(t, sink.wait(t))
			requireFields(t, "pktgen result", gr, pktgenFields...)
			requireFields(t, "sink result", sr, sinkFields...)
			if num(gr, "packets") != tc.count || num(gr, "errors") != 0 || num(gr, "doorbells") != tc.doorbells {
				t.Errorf("pktgen: %v; want %d packets in %d doorbells", gr, tc.count, tc.doorbells)
			}
			if num(sr, "packets") != tc.count || num(sr, "lost") != 0 || num(sr, "reordered") != 0 ||
				num(sr, "kernel_drops") != 0 || num(sr, "flows") != uint64(tc.flows) {
				t.Errorf("sink: %v; want %d packets in %d flows, none lost", sr, tc.count, tc.flows)
			}
			if num(gr, "bytes") != num(sr, "bytes") {
				t.Errorf("pktgen sent %d bytes, sink got %d", num(gr, "bytes"), num(sr, "bytes"))
			}
		})
	}
}

// TestPktgenSinkText checks the text lines: intervals, then the result.
func TestPktgenSinkText(t *testing.T) {
	port := freePorts(t, 1)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	sink := startBg(t, exec.Command(buildSkb(t), "sink", "--listen", addr, "-t", "10s", "--idle", "2s"))
	sink.bound(t, addr)
	out := mustSkb(t, "pktgen", "--dst", addr, "-t", "2500ms", "-r", "5000", "-b", "4")
	// A line per second and one for the last half second (a stalled
	// machine may skip one), then the result.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	iv := regexp.MustCompile(`^\[\s+[12]\.\ds\] \d+ pps, [\d.]+ Mbit/sec, 0 errors, \d+ doorbells$`)
	res := regexp.MustCompile(`^sent \d+ packets, \d+ bytes in \d\.\d\d seconds = \d+ pps, [\d.]+ Mbit/sec; 0 errors, \d+ doorbells$`)
	ok := len(lines) >= 3 && len(lines) <= 4 && res.MatchString(lines[len(lines)-1]) &&
		regexp.MustCompile(`^\[  2\.[5-9]s\] `).MatchString(lines[len(lines)-2]) // the end, or a late wake-up after it
	for _, l := range lines[:len(lines)-1] {
		ok = ok && iv.MatchString(l)
	}
	if !ok {
		t.Errorf("pktgen output:\n%s", out)
	}
	sout := sink.wait(t)
	if !regexp.MustCompile(`(?m)^received \d+ packets, \d+ bytes in [\d.]+ seconds = \d+ pps, [\d.]+ Mbit/sec; 0 lost, 0 reordered, 0 duplicates, 0 kernel drops, \d+ copybreak$`).MatchString(sout) ||
		!strings.Contains(sout, "one-way latency: p50 = ") {
		t.Errorf("sink output:\n%s", sout)
	}
}

// TestSinkTextDuplicates checks that the text result counts what the JSON
// does of pktgen's clones, as duplicates, and of packets without a stamp.
func TestSinkTextDuplicates(t *testing.T) {
	port := freePorts(t, 1)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	sink := startBg(t, exec.Command(buildSkb(t), "sink", "--listen", addr, "-n", "1000", "-t", "10s", "--idle", "2s"))
	sink.bound(t, addr)
	mustSkb(t, "pktgen", "--dst", addr, "-n", "999", "--clone", "3", "-r", "20000", "-t", "10s")
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("no stamp"))
	c.Close()
	out := sink.wait(t)
	re := regexp.MustCompile(`(?m)^received 1000 packets, .*; 0 lost, 0 reordered, 666 duplicates, 0 kernel drops, \d+ copybreak, 1 unstamped$`)
	if !re.MatchString(out) {
		t.Errorf("sink output:\n%s\nwant a line matching %v", out, re)
	}
}

// TestSinkResultLine checks the text result line: every count, and the
// notes of unstamped packets, other frames and truncated packets only when
// there were any.
func TestSinkResultLine(t *testing.T) {
	r := traffic.SinkResult{Packets: 999, Bytes: 63936, Seconds: 0.05, PPS: 19980, Mbps: 10.23,
		Lost: 1, Reordered: 2, Duplicates: 666, KernelDrops: 3, Copybreak: 999}
	want := "received 999 packets, 63936 bytes in 0.05 seconds = 19980 pps, 10.23 Mbit/sec; 1 lost, 2 reordered, 666 duplicates, 3 kernel drops, 999 copybreak"
	if got := sinkResultLine(r, 0); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	r.Unstamped, r.Other = 4, 6
	if got := sinkResultLine(r, 5); got != want+", 4 unstamped, 6 other frames, 5 truncated" {
		t.Errorf("with unstamped, other frames and truncated: %q", got)
	}
}

func TestPingPongCLI(t *testing.T) {
	for _, busy := range []bool{false, true} {
		port := freePorts(t, 1)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		args := []string{"pingpong", "--server", "--listen", addr, "-t", "20s", "--count", "2750"}
		cargs := []string{"pingpong", "--connect", addr, "-s", "100", "-n", "2000", "--timeout", "5s", "-t", "20s"}
		if busy {
			args = append(args, "--busy-poll")
			cargs = append(cargs, "--busy-poll")
		}
		srv := startBg(t, exec.Command(buildSkb(t), args...))
		srv.bound(t, addr)
		out := mustSkb(t, cargs...)
		// ibv_rc_pingpong's lines, then the percentiles.
		re := regexp.MustCompile(`(?m)^(\[.*\n)*400000 bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec
2000 iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter
p50 = \d+\.\d\d usec, p99 = \d+\.\d\d usec, p99.9 = \d+\.\d\d usec
$`)
		if !re.MatchString(out) {
			t.Errorf("busy %v: client output:\n%s", busy, out)
		}
		_, r := ndjson(t, mustSkb(t, append(cargs, "--json", "-n", "500")...))
		requireFields(t, "pingpong result", r, pingpongFields...)
		if num(r, "iters") != 500 || num(r, "bytes") != 500*100*2 || r["p50_us"].(float64) <= 0 {
			t.Errorf("busy %v: %v", busy, r)
		}
		sout := srv.wait(t)
		if !strings.Contains(sout, "echoed 2750 packets") { // 2000+200 and 500+50 warm-up
			t.Errorf("busy %v: server output:\n%s", busy, sout)
		}
	}
}

// TestPingPongServerLeaves checks the client's error when the server
// stops during the run: the result so far, then one line that says the
// server refused the packets, not the device's bare errno.
func TestPingPongServerLeaves(t *testing.T) {
	// The refusal is the kernel's ICMP port unreachable: on each CPU in
	// turn, until one sends them.
	icmptest.OnEachCPU(t, func() error {
		addr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1))
		srv := startBg(t, exec.Command(buildSkb(t), "pingpong", "--server", "--listen", addr, "-t", "10s", "--count", "20"))
		srv.bound(t, addr)
		out, errOut, code := skb(t, "pingpong", "--connect", addr, "-n", "100000", "--warmup", "-1", "--timeout", "1s", "-t", "10s")
		srv.wait(t)
		want := "skb: pingpong: " + addr + " refused the packets (ICMP port unreachable) after "
		if code != 1 || !strings.Contains(out, " iters in ") || !strings.HasPrefix(errOut, want) ||
			!strings.Contains(errOut, "stopped during the run") || strings.Count(errOut, "\n") != 1 {
			return fmt.Errorf("exit %d\nstdout:\n%s\nstderr: %q\nwant exit 1, the result, and one line starting %q", code, out, errOut, want)
		}
		// A request the server took as it stopped got no reply: the error
		// line counts it, no line of the result calls it lost.
		if strings.Contains(out, " lost") {
			return fmt.Errorf("stdout counts lost requests apart from the refusal:\n%s", out)
		}
		srv = startBg(t, exec.Command(buildSkb(t), "pingpong", "--server", "--listen", addr, "-t", "10s", "--count", "20"))
		srv.bound(t, addr)
		out, errOut, code = skb(t, "pingpong", "--connect", addr, "-n", "100000", "--warmup", "-1", "--timeout", "1s", "-t", "10s", "--json")
		srv.wait(t)
		_, r := ndjson(t, out)
		lost := fmt.Sprintf("; %d %s before the refusal got no reply within 1s (a request the server takes as it stops is never answered);",
			num(r, "lost"), map[bool]string{true: "request", false: "requests"}[num(r, "lost") == 1])
		if code != 1 || num(r, "iters") != 20 || !strings.HasPrefix(errOut, want) || strings.Contains(errOut, lost) != (num(r, "lost") > 0) {
			return fmt.Errorf("--json: exit %d, result %v, stderr %q; want the lost requests counted in the error, %q", code, r, errOut, lost)
		}
		return nil
	})
}

// fakeServer listens on the UDP address addr and hands each datagram to
// answer, on its reading goroutine (p is valid during the call only),
// until the test ends; it returns the address bound.
func fakeServer(t *testing.T, addr string, answer func(c net.PacketConn, p []byte, from net.Addr)) string {
	t.Helper()
	c, err := net.ListenPacket("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			answer(c, buf[:n], from)
		}
	}()
	return c.LocalAddr().String()
}

// TestPingPongCutReplies runs the client against an echo that answers
// every request one byte short: no round trip, and the error says that
// packets came back, not that no server runs there; the JSON counts them
// in stray.
func TestPingPongCutReplies(t *testing.T) {
	addr := fakeServer(t, fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)), func(c net.PacketConn, p []byte, from net.Addr) {
		c.WriteTo(p[:max(len(p)-1, 0)], from)
	})
	out, errOut, code := skb(t, "pingpong", "--connect", addr, "-n", "10", "--timeout", "100ms", "--json")
	_, r := ndjson(t, out)
	if code != 1 || !strings.Contains(errOut, "no reply from "+addr) || !strings.Contains(errOut, "of this run's requests came back resized (not --size 64 bytes: cut short or grown on the way)") ||
		strings.Contains(errOut, "running there") || num(r, "stray") < 3 || num(r, "resized") < 3 || num(r, "late") != 0 {
		t.Errorf("exit %d, result %v, stderr %q; want exit 1, the cut replies said and counted in stray", code, r, errOut)
	}
}

// TestPingPongLateWarmupHint answers every request 30 ms late, past the
// client's 20 ms timeout: the first requests, the warm-up's, get no reply
// in time and their replies come while the next are awaited, so the
// client fails saying the replies came later and to give a longer
// --timeout (the warm-up's late replies count apart, in warmup_late).
func TestPingPongLateWarmupHint(t *testing.T) {
	addr := fakeServer(t, "127.0.0.1:0", func(c net.PacketConn, p []byte, from net.Addr) {
		reply := append([]byte(nil), p...)
		time.AfterFunc(30*time.Millisecond, func() { c.WriteTo(reply, from) })
	})
	out, errOut, code := skb(t, "pingpong", "--connect", addr, "-n", "100", "--timeout", "20ms", "--json")
	_, r := ndjson(t, out)
	if code != 1 || !strings.Contains(errOut, "came later") || !strings.Contains(errOut, "give a longer --timeout") ||
		num(r, "warmup_late") < 1 || num(r, "late") != 0 || num(r, "lost") != 0 || num(r, "warmup_lost") < 3 {
		t.Errorf("exit %d, result %v, stderr %q; want exit 1, the late replies said, with the hint of a longer --timeout, counted as the warm-up's", code, r, errOut)
	}
}

// TestPingPongFrom runs a server bound to the wildcard address with
// --from: it answers a loopback client when the prefix holds 127.0.0.1,
// and counts the requests as not answered when it does not.
func TestPingPongFrom(t *testing.T) {
	for _, tc := range []struct {
		from   string
		answer bool
	}{{"127.0.0.0/8", true}, {"198.18.0.0/15", false}} {
		port := freePorts(t, 1)
		srv := startBg(t, exec.Command(buildSkb(t), "pingpong", "--server", "--listen", fmt.Sprintf("0.0.0.0:%d", port),
			"--from", tc.from, "--idle", "1s", "-t", "10s"))
		srv.bound(t, fmt.Sprintf("0.0.0.0:%d", port))
		timeout := "100ms" // an unanswered request ends the run after it
		if tc.answer {
			timeout = "2s" // a reply that should come, on a loaded machine
		}
		out, errOut, code := skb(t, "pingpong", "--connect", fmt.Sprintf("127.0.0.1:%d", port), "-n", "20", "--warmup", "-1",
			"--timeout", timeout, "-t", "5s")
		sout := srv.wait(t)
		switch {
		case tc.answer && (code != 0 || !strings.Contains(out, "20 iters in ") || !strings.Contains(sout, "echoed 20 packets")):
			t.Errorf("--from %s: client exit %d, %q %q; server %q: want 20 answered", tc.from, code, out, errOut, sout)
		case !tc.answer && (code == 0 || !strings.Contains(errOut, "no reply") || !strings.Contains(sout, "echoed 0 packets") ||
			!strings.Contains(sout, " not answered")):
			t.Errorf("--from %s: client exit %d, %q %q; server %q: want no answer, counted", tc.from, code, out, errOut, sout)
		}
	}
}

// TestPingPongWildcard runs servers bound to 0.0.0.0 and :: with --pktinfo
// and clients connected to addresses other than the one the route back
// picks (127.0.0.2; ::1 and 127.0.0.2 on the dual-stack one), sleeping and
// busy-polling: each answer must come from the address its request went
// to, or the connected client drops it. (Without --pktinfo these clients
// see no reply.)
func TestPingPongWildcard(t *testing.T) {
	for _, tc := range []struct {
		listen  string
		clients []string
		busy    bool
	}{
		{"0.0.0.0", []string{"127.0.0.2"}, false},
		{"0.0.0.0", []string{"127.0.0.2"}, true},
		{"::", []string{"::1", "127.0.0.2"}, false},
	} {
		port := freePorts(t, 1)
		listen := net.JoinHostPort(tc.listen, strconv.Itoa(port))
		// An idle time well over a loaded machine's start of the next
		// client process.
		args := []string{"pingpong", "--server", "--listen", listen, "--pktinfo", "--idle", "1500ms", "-t", "10s"}
		if tc.busy {
			args = append(args, "--busy-poll")
		}
		srv := startBg(t, exec.Command(buildSkb(t), args...))
		srv.bound(t, listen)
		for _, host := range tc.clients {
			args := []string{"pingpong", "--connect", net.JoinHostPort(host, strconv.Itoa(port)), "-n", "20", "--warmup", "-1",
				"--timeout", "2s", "-t", "5s"}
			if tc.busy {
				args = append(args, "--busy-poll")
			}
			out, errOut, code := skb(t, args...)
			if code != 0 || !strings.Contains(out, "20 iters in ") {
				t.Errorf("server on %s, client to %s (busy-poll %v): exit %d, %q %q", listen, host, tc.busy, code, out, errOut)
			}
		}
		want := fmt.Sprintf("echoed %d packets", 20*len(tc.clients))
		if sout := srv.wait(t); !strings.Contains(sout, want) {
			t.Errorf("server on %s: %q, want %q", listen, sout, want)
		}
	}
}

// TestPingPongNoReply runs the client against sockets that never answer:
// the error names the wait (--timeout, or --duration when shorter, which
// bounds the wait too), gives the wildcard-server hint only when the
// client's own address is not the destination's, and --json still ends
// with a result object. --src takes a bracketed IPv6 address alone.
func TestPingPongNoReply(t *testing.T) {
	quiet4, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		t.Fatal(err)
	}
	defer quiet4.Close()
	quiet6, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer quiet6.Close()
	p4, p6 := quiet4.LocalAddr().(*net.UDPAddr).Port, quiet6.LocalAddr().(*net.UDPAddr).Port
	for _, tc := range []struct {
		args []string
		want string
		hint bool
	}{
		{[]string{"--connect", fmt.Sprintf("127.0.0.1:%d", p4), "--timeout", "200ms"}, "to 3 requests, within 200ms each", false},
		{[]string{"--connect", fmt.Sprintf("127.0.0.2:%d", p4), "--timeout", "200ms"}, "to 3 requests, within 200ms each", true},
		{[]string{"--connect", fmt.Sprintf("[::1]:%d", p6), "--src", "[::1]", "--timeout", "200ms"}, "to 3 requests, within 200ms each", false},
		{[]string{"--connect", fmt.Sprintf("127.0.0.1:%d", p4), "--timeout", "100ms", "-n", "1", "--warmup", "-1"}, "to 1 request within 100ms", false},
		{[]string{"--connect", fmt.Sprintf("127.0.0.1:%d", p4), "--timeout", "100ms", "-n", "2", "--warmup", "-1"}, "to 2 requests, within 100ms each", false},
		{[]string{"--connect", fmt.Sprintf("127.0.0.1:%d", p4), "--timeout", "30s", "-t", "300ms"}, "within 300ms, when the run's duration ended", false},
	} {
		t0 := time.Now()
		out, errOut, code := skb(t, append([]string{"pingpong", "-n", "5", "--json"}, tc.args...)...)
		el := time.Since(t0)
		_, r := ndjson(t, out)
		if code != 1 || !strings.Contains(errOut, "no reply from") || !strings.Contains(errOut, tc.want) ||
			strings.Contains(errOut, "--pktinfo") != tc.hint || r == nil || num(r, "iters") != 0 || el > 10*time.Second {
			t.Errorf("%v: exit %d after %v, stdout %q, stderr %q; want %q, hint %v, a result object with 0 iters",
				tc.args, code, el, out, errOut, tc.want, tc.hint)
		}
	}
}

func TestMemringCLI(t *testing.T) {
	_, r := ndjson(t, mustSkb(t, "pktgen", "--dev", "memring", "-n", "5000", "-b", "32", "--json"))
	if num(r, "packets") != 5000 || num(r, "doorbells") != 157 {
		t.Errorf("pktgen over memring: %v", r)
	}
	if d, ok := r["dst"]; ok {
		t.Errorf("pktgen over memring: \"dst\": %v; memring has no addresses: want no dst field", d)
	}
	_, r = ndjson(t, mustSkb(t, "pingpong", "--dev", "memring", "-n", "300", "--json"))
	if num(r, "iters") != 300 {
		t.Errorf("pingpong over memring: %v", r)
	}
	if c, ok := r["connect"]; ok {
		t.Errorf("pingpong over memring: \"connect\": %v; a memring pair connects nowhere: want no connect field", c)
	}
}

// TestBigDatagrams checks that the udp receivers take every datagram
// pktgen and the pingpong client can send, up to the largest, not only
// those that fit the driver's default 1920-byte receive buffers.
func TestBigDatagrams(t *testing.T) {
	for _, tc := range []struct{ host, size string }{
		{"127.0.0.1", "9000"},
		{"127.0.0.1", "65507"},
		{"::1", "65527"}, // IPv6: no IP header within the 65535 bytes
	} {
		name := tc.host + " " + tc.size
		t.Run("sink "+name, func(t *testing.T) {
			addr := net.JoinHostPort(tc.host, strconv.Itoa(freePorts(t, 1)))
			// A socket buffer that holds all 200 datagrams (13 MiB of
			// 64 KiB ones): on a loaded machine the sink may not run for
			// tens of ms, longer than the default 4 MiB lasts at 5000/s.
			sink := startBg(t, exec.Command(buildSkb(t), "sink", "--json", "--listen", addr, "-n", "200", "-t", "10s", "--rcvbuf", "33554432"))
			sink.bound(t, addr)
			_, gr := ndjson(t, mustSkb(t, "pktgen", "--json", "--dst", addr, "-s", tc.size, "-n", "200", "-r", "5000", "-t", "10s"))
			_, sr := ndjson(t, sink.wait(t))
			if num(gr, "packets") != 200 || num(sr, "packets") != 200 || num(sr, "bytes") != num(gr, "bytes") ||
				num(sr, "dropped") != 0 || num(sr, "truncated") != 0 {
				t.Errorf("pktgen %v\nsink %v", gr, sr)
			}
			if _, ok := sr["truncated"].(float64); !ok {
				t.Errorf("sink result has no truncated field: %v", sr)
			}
		})
		t.Run("pingpong "+name, func(t *testing.T) {
			addr := net.JoinHostPort(tc.host, strconv.Itoa(freePorts(t, 1)))
			srv := startBg(t, exec.Command(buildSkb(t), "pingpong", "--server", "--listen", addr, "-t", "10s", "--count", "55"))
			srv.bound(t, addr)
			_, r := ndjson(t, mustSkb(t, "pingpong", "--json", "--connect", addr, "-s", tc.size, "-n", "50", "--timeout", "2s", "-t", "10s"))
			if sout := srv.wait(t); num(r, "iters") != 50 || num(r, "lost") != 0 || num(r, "late") != 0 || !strings.Contains(sout, "echoed 55 packets") {
				t.Errorf("client %v\nserver %s", r, sout)
			}
		})
	}
}

// TestListenPortZero checks that the receivers given port 0 say on stderr
// which port the kernel picked, receive there, and name it in their JSON
// result.
func TestListenPortZero(t *testing.T) {
	for _, tc := range []struct {
		args   []string // the receiver
		client func(addr string) []string
		result string // in the receiver's stdout
	}{
		{[]string{"sink", "-n", "20", "-t", "10s", "--json"},
			func(addr string) []string { return []string{"pktgen", "--dst", addr, "-n", "20", "-r", "20000"} },
			`"packets":20,`},
		{[]string{"pingpong", "--server", "--count", "11", "-t", "10s", "--json"},
			func(addr string) []string {
				return []string{"pingpong", "--connect", addr, "-n", "10", "--timeout", "2s"}
			},
			`"echoed":11,"bytes":704,`},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			cmd := exec.Command(buildSkb(t), append(tc.args, "--listen", "127.0.0.1:0")...)
			var out, errOut syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill(); <-done })
			re := regexp.MustCompile(`^skb: ` + tc.args[0] + `: listening on (127\.0\.0\.1:\d+)\n$`)
			var m []string
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				// One read of stderr for both checks: the line may arrive
				// between two reads.
				e := errOut.String()
				if m = re.FindStringSubmatch(e); m != nil {
					break
				}
				if time.Now().After(deadline) || strings.Count(e, "\n") > 0 {
					t.Fatalf("stderr %q, want one line matching %v", e, re)
				}
			}
			mustSkb(t, tc.client(m[1])...)
			select {
			case err := <-done:
				done <- err
				if err != nil || !strings.Contains(out.String(), tc.result) || !strings.Contains(out.String(), `"listen":"`+m[1]+`"`) ||
					tc.args[0] == "pingpong" && (!strings.Contains(out.String(), `"kernel_drops":0,`) || !strings.Contains(out.String(), `"cpu_user":`)) {
					t.Errorf("%v: %v; stdout %q, stderr %q", tc.args, err, out.String(), errOut.String())
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("%v did not exit", tc.args)
			}
		})
	}
}

// fakeTruncDev is a device whose only counter is rx_truncated.
type fakeTruncDev struct {
	netdev.Device
	n uint64
}

func (d fakeTruncDev) Stats() netdev.Stats { return netdev.Stats{RxTruncated: d.n} }

// TestSinkCopybreakLimit checks that a --copybreak the udp device cannot
// honour in full is warned about, with the limit in effect, and a lower
// one is not.
func TestSinkCopybreakLimit(t *testing.T) {
	_, errOut, code := skb(t, "sink", "--listen", "127.0.0.1:0", "--copybreak", "5000", "-t", "200ms")
	if code != 0 || !strings.Contains(errOut, "--copybreak 5000: datagrams of 1921 bytes or more are not copied") {
		t.Errorf("--copybreak 5000: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = skb(t, "sink", "--listen", "127.0.0.1:0", "--copybreak", "1900", "-t", "200ms")
	if code != 0 || strings.Contains(errOut, "copybreak") {
		t.Errorf("--copybreak 1900: exit %d, stderr %q", code, errOut)
	}
}

// TestSinkTruncated checks what the sink says of packets its devices
// dropped as too long: nothing when there were none, and otherwise a note
// on the result line and a warning.
func TestSinkTruncated(t *testing.T) {
	if n := rxTruncated([]netdev.Device{fakeTruncDev{n: 0}}); n != 0 || truncatedNote(n) != "" {
		t.Errorf("no truncation: %d, note %q", n, truncatedNote(n))
	}
	n := rxTruncated([]netdev.Device{fakeTruncDev{n: 3}, fakeTruncDev{n: 4}})
	if n != 7 || truncatedNote(n) != ", 7 truncated" {
		t.Errorf("7 truncated: %d, note %q", n, truncatedNote(n))
	}
	if w := truncatedWarning(7); !strings.HasPrefix(w, "skb: sink: warning: 7 packets") || !strings.Contains(w, "rx_truncated") {
		t.Errorf("warning %q", w)
	}
	if got, want := recvSize(netip.MustParseAddr("127.0.0.1")), udp.MaxDatagram4; got != want {
		t.Errorf("recvSize IPv4 %d, want %d", got, want)
	}
	if got, want := recvSize(netip.IPv6Unspecified()), udp.MaxDatagram6; got != want {
		t.Errorf("recvSize :: %d, want %d", got, want)
	}
}

// TestTrafficBadFlags checks that every bad invocation fails with one line
// on stderr, starting "skb: ", and no Go panic or stack.
func TestTrafficBadFlags(t *testing.T) {
	// The two ports below the held one are free too (below the ephemeral
	// range, where no other socket takes them meanwhile).
	held, err := net.ListenPacket("udp4", fmt.Sprintf("127.0.0.1:%d", freePorts(t, 3)+2))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldAddr := held.LocalAddr().String()
	heldPort := held.LocalAddr().(*net.UDPAddr).Port
	flowsFrom := fmt.Sprintf("127.0.0.1:%d", heldPort-2)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"pktgen", "--size", "10"}, "--size 10"},
		{[]string{"pktgen", "--size", "x"}, "skb: pktgen: --size \"x\": want a whole number\n"},
		{[]string{"pktgen", "--size", "70000"}, "--size 70000"},
		{[]string{"pktgen", "--size", "65508"}, "--size 65508: want 32 to 65507 bytes (the largest UDP payload over IPv4)"},
		{[]string{"pktgen", "--size", "65528", "--dst", "[::1]:9"}, "--size 65528: want 32 to 65527 bytes (the largest UDP payload over IPv6)"},
		{[]string{"pingpong", "--size", "65508"}, "want 32 to 65507 bytes (the largest UDP payload over IPv4)"},
		{[]string{"pingpong", "--size", "65528", "--connect", "[::1]:9"}, "want 32 to 65527 bytes (the largest UDP payload over IPv6)"},
		{[]string{"pktgen", "--burst", "0"}, "--burst 0"},
		{[]string{"pktgen", "--flows", "0"}, "--flows 0"},
		{[]string{"pktgen", "--rate", "-1"}, "--rate -1"},
		{[]string{"pktgen", "--duration", "0"}, "--duration 0s"},
		{[]string{"pktgen", "-t", "abc"}, "want a number of seconds (10, 0.5) or a duration with its unit"},
		{[]string{"sink", "--idle", "NaN"}, "want a number of seconds"},
		{[]string{"pktgen", "--clone", "-1"}, "--clone -1"},
		{[]string{"pktgen", "--imix", "64:x"}, "--imix"},
		{[]string{"pktgen", "--imix", "foo"}, "skb: pktgen: --imix \"foo\": size \"foo\" is not a number\n"},
		{[]string{"pktgen", "--imix", "10:1,64:2"}, "skb: pktgen: --imix \"10:1,64:2\": size 10 is below 32 bytes (the stamp)\n"},
		{[]string{"pktgen", "--dst", "255.255.255.255:9"}, "skb: pktgen: --dst 255.255.255.255:9: want a unicast address\n"},
		{[]string{"pingpong", "--connect", "255.255.255.255:9"}, "skb: pingpong: --connect 255.255.255.255:9: want a unicast address\n"},
		{[]string{"pktgen", "--dst", "[::1%lo]:9"}, "addresses with a zone (%lo) are not supported"},
		{[]string{"pktgen", "-t", "2562048h"}, "too long: want at most 292 years"},
		{[]string{"sink", "--rcvbuf", "99999999999"}, "skb: sink: --rcvbuf 99999999999: want 0 (the kernel's default) to 2147483647 bytes\n"},
		{[]string{"pktgen", "--imix", "imix", "--size", "100"}, "not both"},
		{[]string{"pktgen", "--imix", "64:1,70000:1"}, "skb: pktgen: --imix: size 70000 is over 65507 bytes (the largest UDP payload over IPv4)\n"},
		{[]string{"pktgen", "--imix", "64:1,65508:1"}, "skb: pktgen: --imix: size 65508 is over 65507 bytes"},
		{[]string{"pktgen", "--imix", "64:1,65528:1", "--dst", "[::1]:9"}, "skb: pktgen: --imix: size 65528 is over 65527 bytes (the largest UDP payload over IPv6)\n"},
		{[]string{"pktgen", "--imix", "64:1,70000:1", "--dev", "memring"}, "skb: pktgen: --imix: size 70000 is over 65507 bytes"},
		{[]string{"pktgen", "--imix", ""}, "skb: pktgen: --imix: empty list\n"},
		{[]string{"pktgen", "--imix", " "}, "skb: pktgen: --imix: empty list\n"},
		{[]string{"pktgen", "--dst", "nonsense"}, "want IP:PORT"},
		{[]string{"pktgen", "--dst", "example.com:9000"}, "skb: pktgen: --dst \"example.com:9000\": \"example.com\" is not an IP address (no name but localhost is looked up)\n"},
		{[]string{"pktgen", "--dst", "127.0.0.1:99999"}, `port "99999" is not a number from 1 to 65535`},
		{[]string{"pktgen", "--dst", "127.0.0.1:0"}, `--dst "127.0.0.1:0": port "0" is not a number from 1 to 65535`},
		{[]string{"pingpong", "--connect", "127.0.0.1:65536"}, `port "65536" is not a number from 1 to 65535`},
		{[]string{"pingpong", "--server", "--from", "127.0.0.1"}, "skb: pingpong: --from \"127.0.0.1\": want a prefix such as 127.0.0.0/8\n"},
		{[]string{"pingpong", "--from", "127.0.0.0/8"}, "skb: pingpong: --from is for the server (--server), not the client\n"},
		{[]string{"pktgen", "--imix", "64:0"}, "skb: pktgen: --imix \"64:0\": weight 0 is not between 1 and 65536\n"},
		{[]string{"pktgen", "--src", "[::1"}, "skb: pktgen: --src \"[::1\": want IP or IP:PORT, such as 127.0.0.1:9000 or [::1]:9000\n"},
		{[]string{"pingpong", "--pktinfo"}, "skb: pingpong: --pktinfo is for the server (--server), not the client\n"},
		{[]string{"pingpong", "--server", "--pktinfo"}, "skb: pingpong: --pktinfo is for a --listen on 0.0.0.0 or :: (a server on 127.0.0.1 answers from it already)\n"},
		{[]string{"pingpong", "--server", "--pktinfo", "--dev", "afpacket:lo", "--listen", "0.0.0.0:0"}, "skb: pingpong: --pktinfo is for --dev udp (on afpacket:lo the server answers frames from the address they were sent to)\n"},
		{[]string{"pingpong", "--idle", "1s", "--count", "5"}, "skb: pingpong: --idle and --count are for the server (--server), not the client\n"},
		// The client's flags on the server, each named.
		{[]string{"pingpong", "--server", "--listen", "127.0.0.1:47170", "--src", "9.9.9.9:5", "-t", "0.3"},
			"skb: pingpong: --src is for the client (--connect), not the server (--server)\n"},
		{[]string{"pingpong", "--server", "--dst-mac", "00:11:22:33:44:55"}, "skb: pingpong: --dst-mac is for the client (--connect), not the server (--server)\n"},
		{[]string{"pingpong", "--server", "--allow-any-dst"}, "skb: pingpong: --allow-any-dst is for the client"},
		{[]string{"pingpong", "--server", "--timeout", "1s", "-s", "100", "--allow-any-dst"},
			"skb: pingpong: --size, --timeout and --allow-any-dst are for the client (--connect), not the server (--server)\n"},
		{[]string{"pingpong", "--server", "-n", "5", "--warmup", "1"}, "skb: pingpong: --iters and --warmup are for the client"},
		// What memring, whose other end is in the process, would ignore.
		{[]string{"pingpong", "--dev", "memring", "--connect", "127.0.0.1:9"},
			"skb: pingpong: --dev memring takes no --connect: its other end is in this process, not at an address\n"},
		{[]string{"pingpong", "--dev", "memring", "--src", "127.0.0.1", "--allow-any-dst"}, "skb: pingpong: --dev memring takes no --src or --allow-any-dst:"},
		{[]string{"pingpong", "--dev", "memring", "--dst-mac", "02:00:00:00:00:01"}, "skb: pingpong: --dev memring takes no --dst-mac:"},
		{[]string{"pktgen", "--dev", "memring", "--src", "127.0.0.1"}, "skb: pktgen: --dev memring takes no --src: its other end is in this process, not at an address\n"},
		{[]string{"pktgen", "--dev", "memring", "--dst", "127.0.0.1:9", "--dst-mac", "02:00:00:00:00:01"}, "skb: pktgen: --dev memring takes no --dst or --dst-mac:"},
		{[]string{"pktgen", "--dev", "memring", "-s", "9000"}, "skb: pktgen: --size 9000: packet too big for the device: --dev memring carries packets of up to 1514 bytes\n"},
		{[]string{"pktgen", "--dev", "memring", "--imix", "64:1,65507:1"}, "skb: pktgen: --imix size 65507: packet too big for the device: --dev memring carries packets of up to 1514 bytes\n"},
		{[]string{"pingpong", "--dev", "memring", "-s", "65507"}, "skb: pingpong: --size 65507: packet too big for the device: --dev memring carries packets of up to 1514 bytes\n"},
		{[]string{"pktgen", "--flow-len", "4"}, "skb: pktgen: --flow-len is the packets a flow sends before the next flow's turn: give --flows 2 or more\n"},
		{[]string{"sink", "--dev", "afpacket:lo", "--rcvbuf", "1000"}, "skb: sink: --rcvbuf is the udp device's socket buffer: --dev afpacket:lo receives into its own ring\n"},
		{[]string{"pingpong", "--server", "--from", ""}, "skb: pingpong: --from \"\": want a prefix such as 127.0.0.0/8\n"},
		{[]string{"pingpong", "--server", "--listen", "[::1]:0", "--from", "127.0.0.0/8"}, "skb: pingpong: --from 127.0.0.0/8 never matches a source on --listen [::1]:0\n"},
		{[]string{"pingpong", "--server", "--listen", "127.0.0.1:0", "--from", "::1/128"}, "skb: pingpong: --from ::1/128 never matches a source on --listen 127.0.0.1:0\n"},
		{[]string{"pingpong", "--server", "--from", "127.0.0.0/8", "--dev", "memring"}, "skb: pingpong: --dev memring runs its own echo"},
		{[]string{"sink", "--listen", "127.0.0.1:65536"}, `port "65536" is not a number from 0 to 65535`},
		{[]string{"pktgen", "--src", "192.0.2.1"}, "skb: pktgen: --src 192.0.2.1 is not an address of this host"},
		{[]string{"pingpong", "--src", "192.0.2.1"}, "skb: pingpong: --src 192.0.2.1 is not an address of this host"},
		{[]string{"pktgen", "--src", heldAddr, "-n", "1"}, "skb: pktgen: --src " + heldAddr + " is in use by another socket\n"},
		{[]string{"pingpong", "--src", heldAddr, "-n", "1"}, "skb: pingpong: --src " + heldAddr + " is in use by another socket\n"},
		{[]string{"sink", "--listen", heldAddr}, "skb: sink: --listen " + heldAddr + " is in use by another socket\n"},
		{[]string{"pktgen", "--src", "127.0.0.1:9000", "-n", "1"}, "skb: pktgen: --src 127.0.0.1:9000 is a destination of --dst 127.0.0.1:9000 (flows to ports 9000-9000): pktgen would send to its own socket\n"},
		{[]string{"pktgen", "--src", "0.0.0.0:9002", "--dst", "127.0.0.1:9000", "-f", "4", "-n", "1"}, "pktgen would send to its own socket"},
		{[]string{"pingpong", "--connect", "127.0.0.1:9000", "--src", "127.0.0.1:9000", "-n", "1"}, "skb: pingpong: --src 127.0.0.1:9000 and --connect 127.0.0.1:9000 are one socket: the client would send to itself and time its own requests\n"},
		{[]string{"sink", "--listen", flowsFrom, "-f", "3"}, fmt.Sprintf("skb: sink: --listen %s --flows 3: port %d, flow 2's, is in use by another socket\n", flowsFrom, heldPort)},
		{[]string{"pingpong", "--server", "--listen", heldAddr}, "skb: pingpong: --listen " + heldAddr + " is in use by another socket\n"},
		{[]string{"pktgen", "--dev", "afpacket:lo"}, "skb: pktgen: --dev afpacket:lo needs --dst (an address on the link)\n"},
		{[]string{"pktgen", "--dev", "afxdp:lo"}, "skb: pktgen: --dev afxdp:lo:0 needs --dst (an address on the link)\n"},
		{[]string{"pingpong", "--dev", "afpacket:lo"}, "skb: pingpong: --dev afpacket:lo needs --connect (the server's address on the link)\n"},
		{[]string{"pktgen", "--dst", "127.0.0.1:65535", "--flows", "2"}, "ports must lie"},
		{[]string{"pktgen", "--dst", "8.8.8.8:53"}, "--allow-any-dst"},
		{[]string{"pktgen", "--dst", "[2001:db8::1]:9000"}, "--allow-any-dst"},
		{[]string{"pktgen", "--dst", "0.0.0.0:9000"}, "unicast"},
		{[]string{"pktgen", "--dst", "[::1]:9000", "--src", "127.0.0.1"}, "different families"},
		{[]string{"pktgen", "--dev", "bogus"}, "--dev \"bogus\": want udp, afpacket:IFNAME, afxdp:IFNAME[:QUEUE] or memring"},
		{[]string{"pingpong", "--dev", "bogus"}, "--dev \"bogus\": want udp, afpacket:IFNAME, afxdp:IFNAME[:QUEUE] or memring"},
		{[]string{"sink", "--dev", "bogus"}, "--dev \"bogus\": want udp, afpacket:IFNAME or afxdp:IFNAME[:QUEUE]\n"},
		{[]string{"pktgen", "-r", "NaN"}, "skb: pktgen: --rate NaN: want 0 (no limit) or a positive number of packets per second\n"},
		{[]string{"pktgen", "-r", "+Inf"}, "skb: pktgen: --rate +Inf: want 0"},
		{[]string{"pktgen", "--flows", "65536"}, "--flows 65536: want 1 to 65535"},
		{[]string{"sink", "--flows", "1025"}, "--flows 1025: want 1 to 1024"},
		{[]string{"pingpong", "--budget", "-3"}, "skb: pingpong: --budget -3: want 1 to 65536, or 0 for the default\n"},
		{[]string{"sink", "--budget", "0"}, "skb: sink: --budget 0: want 1 to 65536\n"},
		{[]string{"pktgen", "--dev", "afpacket"}, "needs an interface"},
		{[]string{"pktgen", "--dev", "afpacket:nosuchif0", "--dst", "198.18.0.2:9000"}, "no interface \"nosuchif0\""},
		{[]string{"pktgen", "--dev", "afxdp:lo:x"}, "queue"},
		{[]string{"pktgen", "--dev", "afpacket:lo", "--gso"}, "--gso needs --dev udp"},
		{[]string{"pktgen", "--dst-mac", "02:00:00:00:00:01"}, "--dst-mac needs"},
		{[]string{"pktgen", "--dev", "afpacket:lo", "--dst", "127.0.0.1:9000", "--dst-mac", "ff:ff:ff:ff:ff:ff", "-n", "1"}, "skb: pktgen: --dst-mac ff:ff:ff:ff:ff:ff is not one station's address (a broadcast, multicast or zero MAC): give a unicast MAC, or --allow-any-dst\n"},
		{[]string{"pingpong", "--dev", "afpacket:lo", "--connect", "127.0.0.1:9000", "--dst-mac", "01:00:5e:00:00:01", "-n", "1"}, "--dst-mac 01:00:5e:00:00:01 is not one station's address"},
		{[]string{"pktgen", "--dev", "afpacket:lo", "--dst", "127.0.0.1:9000", "--dst-mac", "02:00:00:00:00", "-n", "1"}, "skb: pktgen: --dst-mac \"02:00:00:00:00\" is not a MAC address such as 02:00:c6:12:00:02\n"},
		{[]string{"pktgen", "-s", "99999999999999999999"}, "skb: pktgen: --size \"99999999999999999999\": out of range for a whole number\n"},
		{[]string{"pktgen", "-n", "-1"}, "skb: pktgen: --count \"-1\": want a whole number, 0 or more\n"},
		{[]string{"pktgen", "-r", "abc"}, "skb: pktgen: --rate \"abc\": want a number\n"},
		{[]string{"pktgen", "extra"}, "unknown command"},
		{[]string{"pktgen", "--nosuchflag"}, "unknown flag"},
		{[]string{"sink", "--listen", "198.18.0.2:9000"}, "198.18.0.2 is not an address of this host (in this network namespace): a sink can only receive on its own addresses"},
		{[]string{"sink", "--listen", "224.0.0.1:9000"}, "multicast"},
		{[]string{"sink", "--listen", "255.255.255.255:9000"}, "broadcast"},
		{[]string{"sink", "--listen", "127.0.0.1"}, "want IP:PORT"},
		{[]string{"sink", "--listen", ":9000"}, "skb: sink: --listen \":9000\": no address before the port: give one of this host's, such as 127.0.0.1:9000, or 0.0.0.0:9000 or [::]:9000 for all of them\n"},
		{[]string{"pingpong", "--server", "--listen", ":9000"}, "no address before the port: give one of this host's"},
		{[]string{"pktgen", "--dst", ":9000"}, "skb: pktgen: --dst \":9000\": no address before the port: give the peer's, such as 127.0.0.1:9000 or [::1]:9000\n"},
		{[]string{"pingpong", "--connect", ":9000"}, "no address before the port: give the peer's"},
		{[]string{"sink", "--copybreak", "-1"}, "--copybreak -1"},
		{[]string{"sink", "--spin", "--sleep", "10us"}, "not both"},
		{[]string{"sink", "--spin", "--sleep", "0"}, "not both"},
		{[]string{"sink", "--sleep", "5s"}, "--sleep 5s"},
		{[]string{"sink", "--duration", "-1s"}, "--duration -1s"},
		{[]string{"sink", "--dev", "memring"}, "memring"},
		{[]string{"sink", "--dev", "afpacket:nosuchif0"}, "no interface"},
		{[]string{"sink", "--gro", "--dev", "afpacket:lo"}, "--gro needs --dev udp"},
		{[]string{"sink", "--listen", "127.0.0.1:0", "--flows", "2"}, "--flows needs"},
		{[]string{"pingpong", "--server", "--connect", "127.0.0.1:9"}, "--server takes --listen"},
		{[]string{"pingpong", "--listen", "127.0.0.1:9"}, "--listen needs --server"},
		{[]string{"pingpong", "-s", "4"}, "skb: pingpong: --size 4: want 32 to 65507 bytes"},
		{[]string{"pingpong", "-n", "0"}, "skb: pingpong: --iters 0: want 1 to"},
		{[]string{"pingpong", "--iters", "0"}, "skb: pingpong: --iters 0: want 1 to"},
		{[]string{"pktgen", "-s", "10"}, "skb: pktgen: --size 10: want 32 to 65507 bytes"},
		{[]string{"pingpong", "--timeout", "0s"}, "--timeout"},
		{[]string{"pingpong", "--count", "5"}, "skb: pingpong: --count is for the server (--server), not the client\n"},
		{[]string{"pingpong", "--connect", "127.0.0.1:0"}, `skb: pingpong: --connect "127.0.0.1:0": port "0" is not a number from 1 to 65535`},
		{[]string{"pingpong", "--connect", "224.0.0.1:9100"}, "skb: pingpong: --connect 224.0.0.1:9100: want a unicast address\n"},
		{[]string{"pktgen", "--dst", "127.255.255.255:9000", "-n", "1"}, "skb: pktgen: --dst 127.255.255.255: a broadcast address on lo: want a unicast address\n"},
		{[]string{"pktgen", "--bogus"}, "skb: pktgen: unknown flag: --bogus\n"},
		{[]string{"lab", "up", "--bogus"}, "skb: lab up: unknown flag: --bogus\n"},
		{[]string{"pingpong", "--connect", "8.8.8.8:9100"}, "--allow-any-dst"},
		{[]string{"pingpong", "--connect", "[2001:db8::1]:9100"}, "--allow-any-dst"},
		{[]string{"pingpong", "--server", "--listen", "198.18.0.2:9100"}, "198.18.0.2 is not an address of this host (in this network namespace): a pingpong server can only receive on its own addresses"},
		{[]string{"pingpong", "--server", "--dev", "memring"}, "memring"},
		{[]string{"pingpong", "--dev", "memring", "--warmup", "100000000", "-n", "10", "-t", "0.3"},
			"skb: pingpong: no round trip measured: --duration 300ms ran out before the 100000000 warm-up round trips (--warmup)"},
	}
	// A flag is named by its long name, as the user may have given either.
	short := regexp.MustCompile(`(^|[ "(])-[a-zA-Z]( |:|$)`)
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := skb(t, tc.args...)
			lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
			switch {
			case code == 0:
				t.Errorf("exit 0; stdout %q", out)
			case len(lines) != 1 || !strings.HasPrefix(lines[0], "skb: "):
				t.Errorf("stderr is not one \"skb: \" line: %q", errOut)
			case strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine "):
				t.Errorf("stderr has a Go panic: %q", errOut)
			case !strings.Contains(errOut, tc.want):
				t.Errorf("stderr %q does not say %q", errOut, tc.want)
			case short.MatchString(lines[0]):
				t.Errorf("stderr %q names a flag by its short name", errOut)
			}
		})
	}
	// A closed port, which the kernel answers with ICMP port unreachables
	// (on each CPU in turn, until one sends them): one error line; with
	// --json a failed client still ends with a result object, and it says
	// why, as the error line does.
	t.Run("refused", func(t *testing.T) {
		closed := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1))
		icmptest.OnEachCPU(t, func() error {
			if _, errOut, code := skb(t, "pingpong", "--connect", closed); code != 1 || !strings.Contains(errOut, "is `skb pingpong --server` running there?") || strings.Count(errOut, "\n") != 1 {
				return fmt.Errorf("pingpong to a closed port: exit %d, stderr %q; want exit 1 and one line asking whether a server runs there", code, errOut)
			}
			for _, args := range [][]string{
				{"pingpong", "--json", "--connect", closed},
				{"pktgen", "--json", "--dst", closed, "-n", "50", "-t", "2"},
			} {
				out, errOut, code := skb(t, args...)
				_, r := ndjson(t, out)
				if code != 1 || r["error"] == nil || "skb: "+fmt.Sprint(r["error"])+"\n" != errOut {
					return fmt.Errorf("%v: exit %d, result %v, stderr %q; want exit 1 and the result's error equal to the error line", args, code, r, errOut)
				}
			}
			return nil
		})
	})
}

// TestLinkLayerCLI runs the link-layer devices inside a lab's namespaces,
// as `ip netns exec` does: pktgen on AF_PACKET in A to a UDP sink in B
// (so B's kernel checks every frame's checksums), a pingpong client on
// AF_PACKET in A against a UDP server in B, an AF_PACKET sink in B, and an
// AF_XDP generator.
func TestLinkLayerCLI(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	bin := buildSkb(t)
	devA := "afpacket:" + l.A.Ifname
	run := func(h *lab.Host, args ...string) string {
		t.Helper()
		c := h.Cmd(bin, args...)
		var o, e bytes.Buffer
		c.Stdout, c.Stderr = &o, &e
		if err := c.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, e.String())
		}
		return o.String()
	}
	t.Run("afpacket to udp", func(t *testing.T) {
		sink := startBg(t, l.B.Cmd(bin, "sink", "--json", "--listen", "198.18.0.2:9000", "-n", "1000", "-t", "10s", "--flows", "2"))
		sink.bound(t, "198.18.0.2:9001") // the last of its two ports
		_, gr := ndjson(t, run(&l.A, "pktgen", "--dev", devA, "--dst", "198.18.0.2:9000", "-n", "1000", "-r", "20000",
			"-b", "16", "--flows", "2", "--json"))
		_, sr := ndjson(t, sink.wait(t))
		if num(gr, "packets") != 1000 || num(sr, "packets") != 1000 || num(sr, "lost") != 0 || num(sr, "flows") != 2 {
			t.Errorf("pktgen %v\nsink %v", gr, sr)
		}
		// Bytes and Mbit/s are UDP payload on every device; the link-layer
		// generator adds its frames (14 + 20 + 8 bytes of headers each).
		if num(gr, "bytes") != 64000 || num(sr, "bytes") != 64000 || num(gr, "frame_bytes") != 106000 ||
			gr["frame_mbps"].(float64) <= gr["mbps"].(float64) || sr["frame_bytes"] != nil {
			t.Errorf("bytes: pktgen %v\nsink %v", gr, sr)
		}
		// --dst-mac of the sending interface itself: refused.
		c := l.A.Cmd(bin, "pktgen", "--dev", devA, "--dst", "198.18.0.2:9000", "--dst-mac", lab.MACA.String(), "-n", "1")
		if e, err := c.CombinedOutput(); err == nil || !strings.Contains(string(e), "is "+l.A.Ifname+"'s own address") {
			t.Errorf("--dst-mac of the sender's own interface: %v, %q", err, e)
		}
		out := run(&l.A, "pktgen", "--dev", devA, "--dst", "198.18.0.2:9000", "-n", "10", "-r", "20000")
		if !regexp.MustCompile(`(?m)^sent 10 packets, 640 bytes in [\d.]+ seconds = \d+ pps, [\d.]+ Mbit/sec \([\d.]+ Mbit/sec of frames\); 0 errors`).MatchString(out) {
			t.Errorf("link-layer pktgen text:\n%s", out)
		}
	})
	t.Run("afpacket sink", func(t *testing.T) {
		sink := startBg(t, l.B.Cmd(bin, "sink", "--json", "--dev", "afpacket:"+l.B.Ifname, "--listen", "198.18.0.2:9000",
			"-n", "1000", "-t", "10s"))
		sink.bound(t, "198.18.0.2:9000")
		run(&l.A, "pktgen", "--dst", "198.18.0.2:9000", "-n", "1000", "-r", "20000", "--json")
		_, sr := ndjson(t, sink.wait(t))
		if num(sr, "packets") != 1000 || num(sr, "lost") != 0 || num(sr, "bytes") != 64000 || num(sr, "frame_bytes") != 106000 {
			t.Errorf("sink %v", sr)
		}
		// From a sender with GSO the veth hands over super-frames of 64
		// datagrams: each counts as the datagrams it holds.
		sink = startBg(t, l.B.Cmd(bin, "sink", "--json", "--dev", "afpacket:"+l.B.Ifname, "--listen", "198.18.0.2:9000",
			"-n", "640", "-t", "10s"))
		sink.bound(t, "198.18.0.2:9000")
		run(&l.A, "pktgen", "--dst", "198.18.0.2:9000", "-n", "640", "--gso", "-r", "20000", "--json")
		_, sr = ndjson(t, sink.wait(t))
		if num(sr, "packets") != 640 || num(sr, "lost") != 0 || num(sr, "bytes") != 40960 {
			t.Errorf("GSO super-frames: sink %v", sr)
		}
	})
	t.Run("pingpong afpacket to udp", func(t *testing.T) {
		srv := startBg(t, l.B.Cmd(bin, "pingpong", "--server", "--listen", "0.0.0.0:9100", "-t", "20s", "--count", "330"))
		srv.bound(t, "0.0.0.0:9100")
		_, r := ndjson(t, run(&l.A, "pingpong", "--dev", devA, "--connect", "198.18.0.2:9100", "--src", "198.18.0.1:4321",
			"-n", "300", "--timeout", "5s", "-t", "20s", "--json"))
		srv.wait(t)
		if num(r, "iters") != 300 {
			t.Errorf("pingpong %v", r)
		}
	})
	t.Run("udp pktgen past the MTU", func(t *testing.T) {
		// 1473 bytes of payload make a 1501-byte IPv4 packet on a
		// 1500-byte link: the warning says so; 1472 bytes fit.
		for _, tc := range []struct {
			size string
			warn bool
		}{{"1473", true}, {"1472", false}} {
			c := l.A.Cmd(bin, "pktgen", "--dst", "198.18.0.2:9000", "-s", tc.size, "-n", "1")
			var o, e bytes.Buffer
			c.Stdout, c.Stderr = &o, &e
			// Nothing listens there: B's kernel refuses the datagram,
			// which pktgen reports when the refusal is back before it
			// ends (exit 1), and warns of otherwise (exit 0).
			if err := c.Run(); err != nil && !strings.Contains(e.String(), "198.18.0.2:9000 refused the datagrams") {
				t.Fatalf("-s %s: %v\n%s", tc.size, err, e.String())
			}
			want := "skb: pktgen: warning: 1473-byte datagrams take 1501 bytes over IPv4, more than the MTU of 1500 bytes on the route to 198.18.0.2: the kernel sends each as IP fragments"
			if got := strings.Contains(e.String(), "more than the MTU"); got != tc.warn || tc.warn && !strings.Contains(e.String(), want) {
				t.Errorf("-s %s: stderr %q", tc.size, e.String())
			}
		}
	})
	t.Run("pingpong afpacket to afpacket server", func(t *testing.T) {
		// Both ends on the link: the client holds its source port, so A's
		// stack, which sees the answers too, sends no port unreachable
		// that the server would count as a request it did not answer.
		srv := startBg(t, l.B.Cmd(bin, "pingpong", "--server", "--json", "--dev", "afpacket:"+l.B.Ifname, "--listen", "198.18.0.2:9100",
			"-t", "20s", "--count", "55"))
		srv.bound(t, "198.18.0.2:9100")
		_, r := ndjson(t, run(&l.A, "pingpong", "--dev", devA, "--connect", "198.18.0.2:9100", "--src", "198.18.0.1:4322",
			"-n", "50", "--timeout", "5s", "-t", "20s", "--json"))
		_, sr := ndjson(t, srv.wait(t))
		if num(r, "iters") != 50 || num(sr, "other") != 0 {
			t.Errorf("client %v\nserver %v", r, sr)
		}
	})
	t.Run("pingpong afxdp to afxdp server", func(t *testing.T) {
		// Both sides wait in poll(2) without --busy-poll (pingWait).
		srv := startBg(t, l.B.Cmd(bin, "pingpong", "--server", "--json", "--dev", "afxdp:"+l.B.Ifname, "--listen", "198.18.0.2:9100",
			"-t", "20s", "--count", "220"))
		srv.bound(t, "198.18.0.2:9100")
		_, r := ndjson(t, run(&l.A, "pingpong", "--dev", "afxdp:"+l.A.Ifname, "--connect", "198.18.0.2:9100", "--src", "198.18.0.1:4323",
			"-n", "200", "--timeout", "5s", "-t", "20s", "--json"))
		_, sr := ndjson(t, srv.wait(t))
		if num(r, "iters") != 200 || num(sr, "echoed") != 220 {
			t.Errorf("client %v\nserver %v", r, sr)
		}
	})
	t.Run("link-layer server answers only its address", func(t *testing.T) {
		// Requests to 198.18.0.3, framed to B's MAC, reach B's interface:
		// a server on --listen 198.18.0.2 leaves them unanswered, counted
		// as other frames, and the client gets no reply.
		srv := startBg(t, l.B.Cmd(bin, "pingpong", "--server", "--json", "--dev", "afpacket:"+l.B.Ifname, "--listen", "198.18.0.2:9100",
			"-t", "20s"))
		srv.bound(t, "198.18.0.2:9100")
		c := l.A.Cmd(bin, "pingpong", "--dev", devA, "--connect", "198.18.0.3:9100", "--dst-mac", lab.MACB.String(),
			"--src", "198.18.0.1:4324", "-n", "5", "--warmup", "-1", "--timeout", "300ms", "-t", "5s")
		var e bytes.Buffer
		c.Stderr = &e
		if err := c.Run(); err == nil || !strings.Contains(e.String(), "no reply from 198.18.0.3:9100") {
			t.Errorf("client: %v, %q; want no reply", err, e.String())
		}
		// Ended by SIGINT, the server still prints its result.
		srv.cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-srv.done:
			srv.done <- err
		case <-time.After(10 * time.Second):
			t.Fatal("the server did not end on SIGINT")
		}
		_, sr := ndjson(t, srv.stdout.String())
		if num(sr, "echoed") != 0 || num(sr, "other") == 0 {
			t.Errorf("server %v: want nothing echoed, the request counted as other", sr)
		}
	})
	t.Run("link-layer client, no server", func(t *testing.T) {
		// B's kernel answers each request with a port unreachable, which
		// the link-layer client takes in as a stray frame: no server
		// there, not replies cut on the way.
		c := l.A.Cmd(bin, "pingpong", "--dev", devA, "--connect", "198.18.0.2:9199", "--src", "198.18.0.1:4325",
			"-n", "5", "--warmup", "-1", "--timeout", "300ms", "-t", "5s")
		var e bytes.Buffer
		c.Stderr = &e
		if err := c.Run(); err == nil || !strings.Contains(e.String(), "no reply from 198.18.0.2:9199") || !strings.Contains(e.String(), "is `skb pingpong --server` running there?") {
			t.Errorf("client: %v, %q; want no reply, and the question whether a server runs", err, e.String())
		}
	})
	t.Run("link-layer sink on any address", func(t *testing.T) {
		sink := startBg(t, l.B.Cmd(bin, "sink", "--json", "--dev", "afpacket:"+l.B.Ifname, "--listen", "0.0.0.0:9000",
			"-n", "100", "-t", "10s"))
		sink.bound(t, "0.0.0.0:9000")
		run(&l.A, "pktgen", "--dst", "198.18.0.2:9000", "-n", "100", "-r", "20000", "--json")
		_, sr := ndjson(t, sink.wait(t))
		if num(sr, "packets") != 100 || sr["listen"] != "0.0.0.0:9000" {
			t.Errorf("sink %v", sr)
		}
	})
	for _, kind := range []string{"afpacket", "afxdp"} {
		// A UDP client against a link-layer server: the kernel in A checks
		// each answer's checksums (a veth hands over frames whose UDP
		// checksum holds only the pseudo-header sum), and the server's
		// port is held so that B's stack sends no port unreachable.
		t.Run("pingpong udp to "+kind+" server", func(t *testing.T) {
			srv := startBg(t, l.B.Cmd(bin, "pingpong", "--server", "--dev", kind+":"+l.B.Ifname, "--listen", "198.18.0.2:9100",
				"-t", "20s", "--count", "220"))
			srv.bound(t, "198.18.0.2:9100")
			_, r := ndjson(t, run(&l.A, "pingpong", "--connect", "198.18.0.2:9100", "-n", "200", "--timeout", "5s", "-t", "20s", "--json"))
			srv.wait(t)
			if num(r, "iters") != 200 {
				t.Errorf("pingpong %v", r)
			}
		})
	}
	t.Run("afxdp", func(t *testing.T) {
		sink := startBg(t, l.B.Cmd(bin, "sink", "--json", "--listen", "198.18.0.2:9000", "-n", "500", "-t", "10s"))
		sink.bound(t, "198.18.0.2:9000")
		_, gr := ndjson(t, run(&l.A, "pktgen", "--dev", "afxdp:"+l.A.Ifname, "--dst", "198.18.0.2:9000", "-n", "500", "-r", "20000", "-b", "8", "--json"))
		_, sr := ndjson(t, sink.wait(t))
		if num(gr, "packets") != 500 || num(sr, "packets") != 500 {
			t.Errorf("pktgen %v\nsink %v", gr, sr)
		}
		// UDP checksum 0 ("none" over IPv4): B's stack takes the frames.
		sink = startBg(t, l.B.Cmd(bin, "sink", "--json", "--listen", "198.18.0.2:9000", "-n", "500", "-t", "10s"))
		sink.bound(t, "198.18.0.2:9000")
		_, gr = ndjson(t, run(&l.A, "pktgen", "--dev", "afxdp:"+l.A.Ifname, "--dst", "198.18.0.2:9000", "-n", "500", "-r", "20000",
			"-b", "8", "--no-udp-csum", "--json"))
		_, sr = ndjson(t, sink.wait(t))
		if num(gr, "packets") != 500 || num(sr, "packets") != 500 || gr["no_udp_csum"] != true {
			t.Errorf("--no-udp-csum: pktgen %v\nsink %v", gr, sr)
		}
	})
	t.Run("too big", func(t *testing.T) {
		// The limits the drivers keep (MTU 1500): an untagged frame of
		// MTU+14 bytes on afpacket, MTU+18 on afxdp; refused before anything
		// is sent, with one message whether Xmit or Alloc would refuse.
		devX := "afxdp:" + l.A.Ifname
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"pktgen", "--dev", devA, "-s", "1473"}, "skb: pktgen: --size 1473: packet too big for the device: --dev " + devA +
				" sends frames of up to 1514 bytes, UDP payloads of up to 1472 bytes over IPv4\n"},
			{[]string{"pktgen", "--dev", devA, "-s", "2000"}, "skb: pktgen: --size 2000: packet too big for the device: --dev " + devA},
			{[]string{"pktgen", "--dev", devA, "--imix", "64:1,3000:1"}, "skb: pktgen: --imix size 3000: packet too big for the device"},
			// The same limit as afpacket: the driver's room for a VLAN tag
			// is not for the tool's untagged frames.
			{[]string{"pktgen", "--dev", devX, "-s", "1473"}, "skb: pktgen: --size 1473: packet too big for the device: --dev " + devX +
				":0 sends frames of up to 1514 bytes, UDP payloads of up to 1472 bytes over IPv4\n"},
			{[]string{"pktgen", "--dev", devX, "-s", "2000"}, "skb: pktgen: --size 2000: packet too big for the device: --dev " + devX},
			{[]string{"pingpong", "--dev", devA, "--connect", "198.18.0.2:9100", "-s", "2000"}, "skb: pingpong: --size 2000: packet too big for the device"},
			{[]string{"pingpong", "--dev", devX, "--connect", "198.18.0.2:9100", "-s", "2000"}, "skb: pingpong: --size 2000: packet too big for the device"},
			// A veth allocates a queue per CPU and uses one.
			{[]string{"pktgen", "--dev", devX + ":1", "-n", "1"}, fmt.Sprintf("skb: pktgen: --dev %s:1: %s has 1 transmit queue: give a queue from 0 to 0", devX, l.A.Ifname)},
			{[]string{"sink", "--dev", devX + ":1", "--listen", "198.18.0.1:9000"}, fmt.Sprintf("skb: sink: --dev %s:1: %s has 1 queue: give a queue from 0 to 0", devX, l.A.Ifname)},
			// A link-layer receiver takes every frame on the link: an
			// address that is not the interface's would pass unnoticed.
			// Side A's veth has 198.18.0.1, not B's address; without
			// --listen the default, 127.0.0.1, is on no veth.
			{[]string{"sink", "--dev", devA, "--listen", "198.18.0.2:9000"}, "skb: sink: --listen 198.18.0.2:9000: 198.18.0.2 is not an address of " + l.A.Ifname +
				" (ip addr show dev " + l.A.Ifname + "): a sink on --dev " + devA + " can only receive on the interface's own addresses, or on 0.0.0.0:9000 for any\n"},
			{[]string{"sink", "--dev", devX, "--listen", "[2001:2::9]:9000"}, "skb: sink: --listen [2001:2::9]:9000: 2001:2::9 is not an address of " + l.A.Ifname +
				" (ip addr show dev " + l.A.Ifname + "): a sink on --dev " + devX + ":0 can only receive on the interface's own addresses, or on [::]:9000 for any\n"},
			{[]string{"sink", "--dev", devA}, "skb: sink: --dev " + devA + " needs --listen: the default, 127.0.0.1, is not an address of " + l.A.Ifname +
				"; give one of its addresses (ip addr show dev " + l.A.Ifname + ") or 0.0.0.0:9000 for any\n"},
			{[]string{"pingpong", "--server", "--dev", devX, "--listen", "198.18.0.77:9100"}, "skb: pingpong: --listen 198.18.0.77:9100: 198.18.0.77 is not an address of " + l.A.Ifname},
			{[]string{"pingpong", "--server", "--dev", devA}, "skb: pingpong: --dev " + devA + " needs --listen: the default, 127.0.0.1, is not an address of " + l.A.Ifname},
			{[]string{"pktgen", "--no-udp-csum", "-n", "1"}, "skb: pktgen: --no-udp-csum is for the link-layer devices (afpacket, afxdp), which write the UDP header themselves, not --dev udp\n"},
		} {
			if tc.args[0] == "pktgen" {
				tc.args = append(tc.args, "--dst", "198.18.0.2:9000")
			}
			c := l.A.Cmd(bin, tc.args...)
			var o, e bytes.Buffer
			c.Stdout, c.Stderr = &o, &e
			if err := c.Run(); err == nil || o.Len() != 0 || strings.Count(e.String(), "\n") != 1 || !strings.HasPrefix(e.String(), tc.want) {
				t.Errorf("%v: %v; stdout %q, stderr %q; want only %q", tc.args, err, o.String(), e.String(), tc.want)
			}
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		// The lab's namespaces have no route out: nothing can be sent.
		c := l.A.Cmd(bin, "pktgen", "--dst", "10.255.255.1:9000", "--allow-any-dst", "-n", "1")
		var e bytes.Buffer
		c.Stderr = &e
		if err := c.Run(); err == nil || !strings.Contains(e.String(), "is unreachable: network is unreachable") {
			t.Errorf("pktgen to an unroutable address: %v, %q", err, e.String())
		}
	})
	t.Run("no neighbour", func(t *testing.T) {
		c := l.A.Cmd(bin, "pktgen", "--dev", devA, "--dst", "198.18.0.99:9000", "-n", "1")
		var e bytes.Buffer
		c.Stderr = &e
		if err := c.Run(); err == nil || !strings.Contains(e.String(), "no neighbour entry for 198.18.0.99") {
			t.Errorf("pktgen to an unknown neighbour: %v, %q", err, e.String())
		}
	})
}

// TestPktgenUnreachable sends 4 flows to a sink that listens on the first
// port only: the sink counts no loss (it never sees the other flows), and
// pktgen reports and warns of the ICMP port-unreachable messages that the
// other three ports answered with.
func TestPktgenUnreachable(t *testing.T) {
	if _, ok := icmpUnreachable(false); !ok {
		t.Skip("no ICMP counters in /proc/net/snmp")
	}
	icmptest.OnEachCPU(t, func() error {
		port := freePorts(t, 4)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		sink := startBg(t, exec.Command(buildSkb(t), "sink", "--json", "--listen", addr, "-n", "100", "-t", "10s"))
		sink.bound(t, addr)
		out, errOut, code := skb(t, "pktgen", "--json", "--dst", addr, "-f", "4", "-n", "400", "-r", "20000", "-t", "10s")
		if code != 0 {
			t.Fatalf("pktgen: exit %d: %s", code, errOut)
		}
		_, gr := ndjson(t, out)
		_, sr := ndjson(t, sink.wait(t))
		if num(sr, "packets") != 100 || num(sr, "lost") != 0 || num(sr, "flows") != 1 {
			t.Errorf("sink %v: want the 100 packets of flow 0 and no loss", sr)
		}
		// The kernel answers each of the 300 with a port unreachable
		// (loopback is not rate-limited per peer, only by the global
		// limit).
		if n := num(gr, "icmp_unreachable"); n < 50 {
			return fmt.Errorf("pktgen icmp_unreachable %d, want most of the 300 refused: %v", n, gr)
		}
		want := fmt.Sprintf("ICMP destination unreachable messages reached this network namespace during the run (any program's, not only pktgen's): is the destination up, and does something listen on every flow's port (%d to %d)?", port, port+3)
		if !strings.HasPrefix(errOut, "skb: pktgen: warning: ") || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("pktgen stderr %q, want one warning saying %q", errOut, want)
		}
		// Everything refused, without a sink at all. One flow goes
		// through a connected socket, whose sends the kernel refuses
		// after a port unreachable: counted in errors, and the run's
		// error, in one line, after the result.
		out, errOut, code = skb(t, "pktgen", "--json", "--dst", addr, "-n", "50", "-r", "20000")
		if _, gr = ndjson(t, out); num(gr, "errors") == 0 || !strings.Contains(fmt.Sprint(gr["first_error"]), "connection refused") {
			return fmt.Errorf("pktgen to no sink, one flow: %v; want errors counted, the first connection refused", gr)
		}
		want = fmt.Sprintf("skb: pktgen: %s refused the datagrams (ICMP port unreachable; %d of %d sends failed, the first with connection refused): does a sink listen there, for the whole run?",
			addr, int(num(gr, "errors")), int(num(gr, "errors")+num(gr, "packets")))
		if code != 1 || !strings.HasPrefix(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("pktgen to no sink: exit %d, stderr %q; want exit 1 and one line %q", code, errOut, want)
		}
		// One datagram: its refusal, which no later send reports, waits
		// in the socket (on loopback at once), and pktgen reads it there.
		out, errOut, code = skb(t, "pktgen", "--json", "--dst", addr, "-n", "1")
		want = fmt.Sprintf("skb: pktgen: %s refused the datagrams (ICMP port unreachable for the last sent, which no later send reported", addr)
		if _, gr = ndjson(t, out); code != 1 || num(gr, "packets") != 1 || num(gr, "errors") != 0 || !strings.HasPrefix(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("pktgen -n 1 to no sink: exit %d, %v, stderr %q; want exit 1, 1 packet sent, 0 errors and one line %q", code, gr, errOut, want)
		}
		return nil
	})
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startSkb starts skb with args, its stdout and stderr captured; done
// closes when it has exited. The test's cleanup kills it and waits.
func startSkb(t *testing.T, args ...string) (cmd *exec.Cmd, out, errOut *syncBuffer, done <-chan struct{}) {
	t.Helper()
	cmd = exec.Command(buildSkb(t), args...)
	out, errOut = new(syncBuffer), new(syncBuffer)
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd, out, errOut, exited
}

// interrupt runs skb with args until it has printed a line on ready (its
// stdout or stderr), sends it sig, and returns its output and exit status.
func interrupt(t *testing.T, sig syscall.Signal, readyOnStderr bool, args ...string) (string, string, int) {
	t.Helper()
	cmd, out, errOut, done := startSkb(t, args...)
	ready := out
	if readyOnStderr {
		ready = errOut
	}
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(ready.String(), "\n"); {
		if time.Now().After(deadline) {
			t.Fatalf("%v printed nothing in 15s; stderr %q", args, errOut.String())
		}
		select {
		case <-done:
			t.Fatalf("%v exited before the signal: stdout %q, stderr %q", args, out.String(), errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%v did not exit after %v", args, sig)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// TestInterrupt checks that every measuring command, stopped by SIGINT or
// SIGTERM, prints its result and exits with 128 + the signal, saying so in
// one line on stderr.
func TestInterrupt(t *testing.T) {
	port := freePorts(t, 1)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	tests := []struct {
		sig    syscall.Signal
		stderr bool // ready when stderr has a line (bench's progress)
		args   []string
		result string // in stdout
	}{
		{syscall.SIGINT, false, []string{"pktgen", "--dst", addr, "-r", "1000", "-t", "30s"}, "\nsent "},
		{syscall.SIGTERM, false, []string{"pktgen", "--json", "--dev", "memring", "-r", "1000", "-t", "30s"}, `"stopped":true,"signal":"SIGTERM"}` + "\n"},
		{syscall.SIGINT, false, []string{"sink", "--json", "--listen", addr, "-t", "30s"}, `"stopped":true,"signal":"SIGINT"}` + "\n"},
		{syscall.SIGTERM, false, []string{"pingpong", "--json", "--server", "--listen", addr, "-t", "30s"}, `"stopped":true,"signal":"SIGTERM"}` + "\n"},
		{syscall.SIGINT, false, []string{"pingpong", "--json", "--dev", "memring", "-n", "10000000", "-t", "30s"}, `"stopped":true,"signal":"SIGINT"}` + "\n"},
		{syscall.SIGINT, false, []string{"sink", "--listen", addr, "-t", "30s"}, "received 0 packets"},
		{syscall.SIGINT, false, []string{"pingpong", "--server", "--listen", addr, "-t", "30s"}, "echoed 0 packets"},
		{syscall.SIGINT, false, []string{"pingpong", "--dev", "memring", "-n", "10000000", "-t", "30s"}, " iters in "},
		{syscall.SIGINT, false, []string{"pingpong", "--dev", "memring", "-n", "10", "--warmup", "100000000", "-t", "30s"}, "0 iters in "},
		{syscall.SIGINT, true, []string{"bench", "--only", "doorbell", "--runs", "50", "--duration", "1s"}, "EXPERIMENT"},
		{syscall.SIGTERM, true, []string{"bench", "--json", "--only", "doorbell", "--runs", "50", "--duration", "1s"}, `"stopped":true,"signal":"SIGTERM"}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := interrupt(t, tc.sig, tc.stderr, tc.args...)
			want := fmt.Sprintf("skb: %s: stopped by %s; the result above is what was measured\n", tc.args[0], unix.SignalName(tc.sig))
			if code != 128+int(tc.sig) || !strings.Contains(out, tc.result) || !strings.HasSuffix(errOut, want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q in stdout, %q", code, out, errOut, 128+int(tc.sig), tc.result, want)
			}
			// A client stopped in its warm-up says why it measured nothing.
			if warm := strings.Contains(errOut, "the signal came during the warm-up"); warm != (tc.result == "0 iters in ") {
				t.Errorf("stderr %q: the warm-up note %v, want it only for a client stopped in its warm-up", errOut, warm)
			}
		})
	}
}

// TestHelpDocuments checks that the help says what the commands do at
// their edges: the flow limits of pktgen and sink, where loss is counted,
// and the exit status after a signal.
func TestHelpDocuments(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"pktgen", []string{"1 to 65535 (a sink listens on at most 1024)", "counts loss only on the ports it listens on", "icmp_unreachable", "exits with status 130 or 143", "--allow-any-dst", `"stopped": true and the signal`}},
		{"sink", []string{"1 to 1024", "packets to other ports are never seen", "exits with status 130 or 143", "longer --idle"}},
		{"pingpong", []string{"exits with status 130 or 143", "--allow-any-dst", "over --dev afxdp in poll(2)",
			"AF_PACKET's ring adds up to a millisecond per receive", "Use udp or afxdp to measure latency",
			"afpacket's receive ring adds up to 1 ms per receive: measure latency over udp or afxdp"}},
		{"bench", []string{"exits with status 130 or 143", "(made if missing)", `then one with "type":"result"`, `"type":"row"`, `"stopped": true`}},
		{"lab down", []string{"--all removes every lab recorded on this machine (in /run/skb/lab",
			"whoever made it", "including those other users or sessions made and may still be using",
			"remove every lab made by skb lab up on this machine, by any user or session"}},
	} {
		out := strings.Join(strings.Fields(mustSkb(t, append(strings.Fields(tc.cmd), "--help")...)), " ")
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("skb %s --help lacks %q:\n%s", tc.cmd, w, out)
			}
		}
	}
}

// TestResultWriteError checks that pktgen, sink and pingpong fail, with
// one line naming the write, when their result cannot be written (stdout
// on /dev/full): a result lost is not a success.
func TestResultWriteError(t *testing.T) {
	port := freePorts(t, 2)
	for _, args := range [][]string{
		{"pktgen", "--dev", "memring", "-n", "100", "-t", "2s"},
		{"pktgen", "--dev", "memring", "-n", "100", "-t", "2s", "--json"},
		{"sink", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "-t", "200ms"},
		{"sink", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "-t", "200ms", "--json"},
		{"pingpong", "--server", "--listen", fmt.Sprintf("127.0.0.1:%d", port+1), "-t", "200ms"},
	} {
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Skipf("no /dev/full: %v", err)
		}
		cmd := exec.Command(buildSkb(t), args...)
		var errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &errOut
		err = cmd.Run()
		full.Close()
		want := "skb: " + args[0] + ": write /dev/stdout: no space left on device\n"
		if err == nil || errOut.String() != want {
			t.Errorf("%v to /dev/full: %v, stderr %q; want a failure and %q", args, err, errOut.String(), want)
		}
	}
}

func TestSendsToSelf(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		src, dst string
		flows    int
		want     bool
	}{
		{"127.0.0.1:9000", "127.0.0.1:9000", 1, true},
		{"127.0.0.1:9003", "127.0.0.1:9000", 4, true},
		{"127.0.0.1:9004", "127.0.0.1:9000", 4, false},
		{"127.0.0.1:8999", "127.0.0.1:9000", 4, false},
		{"0.0.0.0:9000", "127.0.0.1:9000", 1, true},
		{"0.0.0.0:0", "127.0.0.1:9000", 1, false},
		{"127.0.0.2:9000", "127.0.0.1:9000", 1, false},
		{"[::]:9000", "[::1]:9000", 1, true},
		{"0.0.0.0:9000", "198.18.0.2:9000", 1, false},
	} {
		if got := sendsToSelf(ap(tc.src), ap(tc.dst), tc.flows); got != tc.want {
			t.Errorf("sendsToSelf(%s, %s, %d) = %v, want %v", tc.src, tc.dst, tc.flows, got, tc.want)
		}
	}
}

// TestRxFrameWarning checks that an afxdp receiver on a link whose MTU lets
// in frames longer than its UMEM frames hold says so on stderr, once, that
// one on a link of the default MTU says nothing, that one on a link that
// is down says that, and a sender at the other end, without carrier, that.
func TestRxFrameWarning(t *testing.T) {
	bin := buildSkb(t)
	for _, mtu := range []int{0, 9000} {
		l := labtest.New(t, lab.Options{MTU: mtu})
		cmd, stderr := sinkOnB(l, bin, "afxdp:"+l.B.Ifname, "200ms")
		if err := cmd.Run(); err != nil {
			t.Fatalf("MTU %d: sink: %v: %s", mtu, err, stderr.String())
		}
		warned := strings.Contains(stderr.String(), "the kernel drops longer ones")
		if warned != (mtu > 0) || strings.Count(stderr.String(), "\n") > 1 {
			t.Errorf("MTU %d: stderr %q, want the warning only above the frame size", mtu, stderr.String())
		}
		l.Close()
	}
	// A link that is down: said once too.
	l := labBDown(t)
	cmd, stderr := sinkOnB(l, bin, "afxdp:"+l.B.Ifname, "200ms")
	cmd.Run()
	if want := l.B.Ifname + " is down: nothing arrives until it is up"; strings.Count(stderr.String(), want) != 1 {
		t.Errorf("sink on a link that is down: stderr %q, want %q once", stderr.String(), want)
	}
	// Its peer, A's end, has no carrier: a pktgen there says so, and
	// ends with an error once every send fails (on afxdp the kernel drops
	// each frame without an error).
	for _, dev := range []string{"afxdp", "afpacket"} {
		cmd := l.A.Cmd(bin, "pktgen", "--dev", dev+":"+l.A.Ifname, "--dst", "198.18.0.2:9000", "-t", "20s")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		noCarrier := l.A.Ifname + " has no carrier (a veth whose peer is down, a cable out): nothing goes out until it has one"
		if err == nil || strings.Count(stderr.String(), noCarrier) != 1 || !strings.Contains(stderr.String(), "every send fails") {
			t.Errorf("%s pktgen on a link without carrier: %v, stderr %q; want a failure, %q once and every send fails", dev, err, stderr.String(), noCarrier)
		}
		// Ended long before its -t (the bound leaves time for a loaded
		// machine to start it).
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("%s pktgen on a link without carrier ran %v", dev, el)
		}
	}
}

// TestSinkFlowBudget checks the sink's default budget over many ports on
// the udp device: 64 up to 64 ports, then 4096/flows, at least 8.
func TestSinkFlowBudget(t *testing.T) {
	for _, c := range []struct{ flows, want int }{
		{1, 64}, {64, 64}, {65, 63}, {128, 32}, {256, 16}, {512, 8}, {1024, 8},
	} {
		if got := sinkFlowBudget(c.flows); got != c.want {
			t.Errorf("sinkFlowBudget(%d) = %d, want %d", c.flows, got, c.want)
		}
	}
}

// TestInterruptDuringSetup checks that a signal that comes while a sink
// still opens its sockets (1024 of them) stops the run as one during it
// does: a result and 128 + the signal, not a command killed without one.
func TestInterruptDuringSetup(t *testing.T) {
	base := freePorts(t, sinkMaxFlows)
	cmd, out, errOut, done := startSkb(t, "sink", "--listen", fmt.Sprintf("127.0.0.1:%d", base), "-f", fmt.Sprint(sinkMaxFlows), "-t", "30s")
	// The first port bound (read from /proc/net/udp, where a probe of our
	// own could not take the port from the sink): the sink is opening its
	// sockets.
	local := fmt.Sprintf(":%04X ", base)
	for deadline := time.Now().Add(15 * time.Second); ; {
		b, err := os.ReadFile("/proc/net/udp")
		if err != nil {
			t.Skipf("no /proc/net/udp: %v", err)
		}
		if strings.Contains(string(b), local) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink bound no port in 15s; stderr %q", errOut.String())
		}
		select {
		case <-done:
			t.Fatalf("the sink exited: stdout %q, stderr %q", out.String(), errOut.String())
		case <-time.After(time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the sink did not exit after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(out.String(), "received 0 packets") {
		t.Errorf("exit %d (%v), stdout %q, stderr %q; want 130 and a result", code, cmd.ProcessState, out.String(), errOut.String())
	}
}

// TestLinkGoneOrDown checks link-layer sinks when their interface goes
// away: removed mid-run, the afpacket and afxdp sinks, waiting or
// spinning, end at once with an error that says so; down from the start, the afpacket sink waits for it
// to come up, as its warning says, instead of failing.
func TestLinkGoneOrDown(t *testing.T) {
	bin := buildSkb(t)
	for _, dev := range []string{"afpacket", "afxdp", "afpacket --spin", "afxdp --spin"} {
		l := labtest.New(t, lab.Options{})
		d, spin, _ := strings.Cut(dev, " ")
		cmd, _ := sinkOnB(l, bin, d+":"+l.B.Ifname, "10s")
		if spin != "" {
			cmd.Args = append(cmd.Args, spin) // a spinning sink calls no Wait
		}
		// The sink holds its port once its device is open.
		b := startBg(t, cmd)
		b.bound(t, "198.18.0.2:9000")
		removed := removeLink(t, &l.B)
		select {
		case err := <-b.done:
			b.done <- err
			stderr := b.stderr.String()
			if err == nil || !strings.Contains(stderr, "no such device") && !strings.Contains(stderr, "network is down") {
				t.Errorf("%s sink on a removed interface: %v, stderr %q; want an error saying so", dev, err, stderr)
			}
			if el := time.Since(removed); el > 2*time.Second {
				t.Errorf("%s sink ended %v after its interface was removed", dev, el)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s sink still running 5 s after its interface was removed; stderr %q", dev, b.stderr.String())
		}
		l.Close()
	}

	l := labBDown(t)
	cmd, stderr := sinkOnB(l, bin, "afpacket:"+l.B.Ifname, "1s")
	start := time.Now()
	err := cmd.Run()
	if el := time.Since(start); err != nil || el < time.Second {
		t.Errorf("afpacket sink on a link that is down: %v after %v, stderr %q; want it to wait its second out", err, el, stderr.String())
	}
}

// labBDown returns a lab whose B end is down (ip link set down), so that
// A's end has no carrier.
func labBDown(t *testing.T) *lab.Lab {
	t.Helper()
	l := labtest.New(t, lab.Options{})
	if out, err := exec.Command("ip", "-n", l.B.NSName, "link", "set", l.B.Ifname, "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set down: %v: %s", err, out)
	}
	return l
}

// sinkOnB returns the command of an skb sink on lab l's B end over dev
// (afpacket:IF, afxdp:IF) for dur, and the buffer its stderr goes to.
func sinkOnB(l *lab.Lab, bin, dev, dur string) (*exec.Cmd, *bytes.Buffer) {
	cmd := l.B.Cmd(bin, "sink", "--dev", dev, "--listen", "198.18.0.2:9000", "-t", dur)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// TestPktgenInterfaceRemoved removes A's interface under an afxdp and an
// afpacket pktgen: each ends with every send fails, a few seconds later
// (failStall), not at -t; what the afxdp queue still held is said, not
// lost from the count.
func TestPktgenInterfaceRemoved(t *testing.T) {
	bin := buildSkb(t)
	for _, dev := range []string{"afxdp", "afpacket"} {
		l := labtest.New(t, lab.Options{})
		cmd := l.A.Cmd(bin, "pktgen", "--dev", dev+":"+l.A.Ifname, "--dst", "198.18.0.2:9000", "-r", "20000", "-b", "64", "-t", "20s", "--json")
		// Sending once its first second is out.
		b := startBg(t, cmd)
		b.printed(t, `"type":"interval"`)
		removed := removeLink(t, &l.A)
		var err error
		select {
		case err = <-b.done:
			b.done <- err
		case <-time.After(15 * time.Second):
			t.Fatalf("%s pktgen still running 15 s after its interface was removed; stderr %q", dev, b.stderr.String())
		}
		stderr := &b.stderr
		if el := time.Since(removed); err == nil || el > 10*time.Second || !strings.Contains(stderr.String(), "every send fails") {
			t.Errorf("%s pktgen on a removed interface: %v after %v, stderr %q; want every send fails within 10 s", dev, err, el, stderr.String())
		}
		_, r := ndjson(t, b.stdout.String())
		sent, errs, queued := num(r, "packets"), num(r, "errors"), num(r, "queued")
		if held := queued - sent - errs; held > 0 && !strings.Contains(stderr.String(), fmt.Sprintf("%d of the %d packets queued %s neither sent nor counted as errors", int(held), int(queued), plural(int(held), "was", "were"))) {
			t.Errorf("%s: %v queued, %v sent, %v errors; stderr %q does not say where the rest are", dev, queued, sent, errs, stderr.String())
		}
		l.Close()
	}
}

// TestLinkSinkEveryPort checks that a link-layer sink on every port
// (--listen port 0) warns that the host's stack answers the datagrams it
// takes with ICMP port unreachables, once, and one on a port does not.
func TestLinkSinkEveryPort(t *testing.T) {
	bin := buildSkb(t)
	l := labtest.New(t, lab.Options{})
	for _, listen := range []string{"198.18.0.2:0", "198.18.0.2:9000"} {
		cmd := l.B.Cmd(bin, "sink", "--dev", "afpacket:"+l.B.Ifname, "--listen", listen, "-t", "200ms")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("sink --listen %s: %v: %s", listen, err, stderr.String())
		}
		want := "this host's stack answers each datagram with an ICMP port unreachable"
		if n := strings.Count(stderr.String(), want); n != map[bool]int{true: 1, false: 0}[strings.HasSuffix(listen, ":0")] {
			t.Errorf("sink --listen %s: stderr %q", listen, stderr.String())
		}
	}
}

// TestXDPQueueWarning checks the afxdp sink's warning on a veth whose MTU
// keeps the XDP program in generic mode: queue 1 then receives nothing,
// and the sink says so; queue 0, which receives, gets no warning.
func TestXDPQueueWarning(t *testing.T) {
	bin := buildSkb(t)
	l := labtest.New(t, lab.Options{MTU: 9000, Queues: 2})
	for _, q := range []int{0, 1} {
		cmd := l.B.Cmd(bin, "sink", "--dev", fmt.Sprintf("afxdp:%s:%d", l.B.Ifname, q), "--listen", "198.18.0.2:9000", "-t", "200ms")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("sink on queue %d: %v: %s", q, err, stderr.String())
		}
		want := "runs in generic mode (native attach refused: "
		if got := strings.Contains(stderr.String(), want) && strings.Contains(stderr.String(), fmt.Sprintf("queue %d receives nothing (use queue 0)", q)); got != (q == 1) {
			t.Errorf("sink on queue %d: stderr %q; want the generic-mode warning only on queue 1", q, stderr.String())
		}
	}
}

// removeLink removes h's veth end and returns when it did; it fails the
// test when ip(8) fails.
func removeLink(t *testing.T, h *lab.Host) time.Time {
	t.Helper()
	if out, err := exec.Command("ip", "-n", h.NSName, "link", "del", h.Ifname).CombinedOutput(); err != nil {
		t.Fatalf("ip link del: %v: %s", err, out)
	}
	return time.Now()
}

// TestCPUProfile checks --cpuprofile: a profile go tool pprof reads, and a
// warning, the run's result and exit status kept, when the profile cannot
// be written (a full disk: /dev/full).
func TestCPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	mustSkb(t, "pktgen", "--dev", "memring", "-n", "100000", "--cpuprofile", prof)
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v", prof, err)
	}
	out, errOut, code := skb(t, "pktgen", "--dev", "memring", "-n", "1000", "--cpuprofile", "/dev/full")
	if code != 0 || !strings.Contains(out, "sent 1000 packets") ||
		errOut != "skb: warning: --cpuprofile /dev/full: write /dev/full: no space left on device: the profile is incomplete\n" {
		t.Errorf("--cpuprofile /dev/full: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestSinkBadChecksums has scapy send a link-layer sink in lab side B
// three frames with a wrong UDP checksum and three with a wrong IPv4
// header checksum, each with a good stamp, then two good frames. The
// afpacket sink, whose device sets checksum states, counts the six in
// other and the two good ones alone; the afxdp sink catches the IPv4
// header ones (a frame over AF_XDP says nothing of its UDP checksum, which
// a sender on this host leaves to be computed).
func TestSinkBadChecksums(t *testing.T) {
	bin := buildSkb(t)
	py := labtest.ScapyPython(t)
	l := labtest.New(t, lab.Options{})
	// The payloads, each a stamp of run 7, flow 0 and its sequence number,
	// made by the engines' own PutStamp (its check included).
	var payloads []string
	for seq := range uint64(8) {
		b := make([]byte, 64)
		traffic.PutStamp(b, traffic.Stamp{Run: 7, Seq: seq})
		payloads = append(payloads, fmt.Sprintf("bytes.fromhex(%q)", hex.EncodeToString(b)))
	}
	script := fmt.Sprintf(`
from scapy.all import *
conf.verb = 0
payloads = [%s]
def f(seq):
    p = Ether(src=%q, dst=%q)/IP(src="198.18.0.1", dst="198.18.0.2")/UDP(sport=9000, dport=9000)/Raw(payloads[seq])
    return Ether(bytes(p))
frames = []
for i in range(3):
    p = f(i); p[UDP].chksum ^= 0x5555; frames.append(p)
for i in range(3):
    p = f(3 + i); p[IP].chksum ^= 0x5555; frames.append(p)
frames += [f(6), f(7)]
sendp(frames, iface=%q)
`, strings.Join(payloads, ", "), lab.MACA.String(), lab.MACB.String(), l.A.Ifname)
	for _, tc := range []struct {
		dev            string
		packets, other uint64
	}{
		{"afpacket:" + l.B.Ifname, 2, 6},
		{"afxdp:" + l.B.Ifname, 5, 3},
	} {
		cmd := l.B.Cmd(bin, "sink", "--dev", tc.dev, "--listen", "198.18.0.2:9000", "-t", "20s", "--idle", "1s", "--json")
		r, stderr, err := afterScapy(t, cmd, "198.18.0.2:9000", l.A.Cmd(py, "-c", script))
		if err != nil || r == nil || num(r, "packets") != tc.packets || num(r, "other") != tc.other || num(r, "unstamped") != 0 {
			t.Errorf("%s: %v, stderr %q, result %v; want %v packets, %v other, none unstamped", tc.dev, err, stderr, r, tc.packets, tc.other)
		}
	}
}

// TestPingPongServerSelf sends a ping-pong server on 0.0.0.0 in lab side B
// datagrams forged (scapy) from B's own address and the server's port, and
// from an address B gets after the server started: answered, each would
// come back to be answered again until the run ends. The server must count
// them in other and answer nothing.
func TestPingPongServerSelf(t *testing.T) {
	bin := buildSkb(t)
	py := labtest.ScapyPython(t)
	l := labtest.New(t, lab.Options{})
	// Bounded by --idle after the datagrams, however long scapy takes to
	// start on a loaded machine.
	srv := l.B.Cmd(bin, "pingpong", "--server", "--listen", "0.0.0.0:9500", "-t", "20s", "--idle", "2s", "--json")
	script := `import subprocess
from scapy.all import *
conf.verb = 0
conf.L3socket = L3RawSocket
send(IP(src="198.18.0.2", dst="198.18.0.2")/UDP(sport=9500, dport=9500)/Raw(bytes(64)))
subprocess.run(["ip", "addr", "add", "198.18.0.9/32", "dev", "lo"], check=True)
time.sleep(0.2)
send(IP(src="198.18.0.9", dst="198.18.0.9")/UDP(sport=9500, dport=9500)/Raw(bytes(64)))
`
	r, stderr, err := afterScapy(t, srv, "0.0.0.0:9500", l.B.Cmd(py, "-c", script))
	if err != nil || r == nil || num(r, "echoed") != 0 || num(r, "other") != 2 {
		t.Errorf("server: %v, stderr %q, result %v; want nothing echoed, 2 other", err, stderr, r)
	}
}

// afterScapy starts cmd (an skb command with --json), waits until it
// holds addr's port (once its device is open), runs the scapy command
// crafter, then waits for cmd to end and returns its result object, its
// standard error and its error.
func afterScapy(t *testing.T, cmd *exec.Cmd, addr string, crafter *exec.Cmd) (map[string]any, string, error) {
	t.Helper()
	b := startBg(t, cmd)
	b.bound(t, addr)
	if out, err := crafter.CombinedOutput(); err != nil {
		t.Fatalf("scapy: %v\n%s", err, out)
	}
	var err error
	select {
	case err = <-b.done:
		b.done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("%v did not exit", cmd.Args)
	}
	_, r := ndjson(t, b.stdout.String())
	return r, b.stderr.String(), err
}
