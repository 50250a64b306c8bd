package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skbdev/skb/lab/labtest"
)

// TestRunLab runs the lab experiments briefly in a lab Run makes, checks
// the shape of their rows, and that the lab is gone afterwards. It needs
// root: it skips without (and fails when CI=true).
func TestRunLab(t *testing.T) {
	labtest.RequireRoot(t)
	labtest.RequireTool(t, "ip", "iproute2")
	only := []string{"afpacket", "afxdp-tx", "afxdp"}
	rep, err := Run(context.Background(), Options{Duration: 200 * time.Millisecond, Runs: 1, Only: only, Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rep, only)
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if stem := fmt.Sprintf("skb%d_", os.Getpid()); strings.Contains(string(out), stem) {
		t.Errorf("a lab of this process is left:\n%s", out)
	}
}

// TestRunLabCancelled cancels a lab run in its first experiment and checks
// that the lab is removed all the same.
func TestRunLabCancelled(t *testing.T) {
	labtest.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, Options{Duration: 5 * time.Second, Runs: 1, Only: []string{"afpacket"}, Lab: true})
	if err == nil {
		t.Fatal("a run cancelled after 300 ms of 10 s returned no error")
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if stem := fmt.Sprintf("skb%d_", os.Getpid()); strings.Contains(string(out), stem) {
		t.Errorf("a lab of this process is left:\n%s", out)
	}
}

// TestProcRun builds the skb tool and runs the AF_XDP variant that runs
// `skb pktgen` and `skb sink` as processes of their own, briefly, with B's
// NAPI threaded: both figures of both sides come back, and threaded NAPI is
// off again afterwards. It needs root and builds the tool with the go
// command.
func TestProcRun(t *testing.T) {
	labtest.RequireRoot(t)
	labtest.RequireTool(t, "ip", "iproute2")
	tool := buildTool(t)
	le, err := newLabEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer le.close()
	e := &env{opts: Options{Tool: tool}, dur: 300 * time.Millisecond, sender: 0, receiver: 1, lab: le}
	if runtime.NumCPU() < 2 {
		e.sender, e.receiver = NoPin, NoPin
	}
	s, err := afxdpProcRun(true)(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Metric{mTxPPS, mRxPPS, mTxCPU, mRxCPU} {
		if s[m.Name] <= 0 {
			t.Errorf("%s is %v; want a positive figure (sample %v)", m.Name, s[m.Name], s)
		}
	}
	// The two rates span different windows (the sink's from its first
	// packet to its last, pktgen's its whole run), so a stall at either
	// end of 300 ms moves them apart: the bound catches a count of each
	// packet twice, not that.
	if s[mRxPPS.Name] > 1.5*s[mTxPPS.Name] {
		t.Errorf("rx pps %.0f above tx pps %.0f", s[mRxPPS.Name], s[mTxPPS.Name])
	}
	// Threaded NAPI is off again: the variants after this one run as they
	// say (the kernel keeps the flag of a veth whose NAPI went away with
	// the sink's program).
	if on, err := le.l.B.Threaded(); err != nil || on {
		t.Errorf("threaded NAPI after the run: %v, %v; want off", on, err)
	}
}

// buildTool builds the skb tool into t's temporary directory with the go
// command and returns its path.
func buildTool(t *testing.T) string {
	t.Helper()
	tool := filepath.Join(t.TempDir(), "skb")
	build := exec.Command("go", "build", "-o", tool, "github.com/skbdev/skb/cmd/skb")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the tool: %v\n%s", err, out)
	}
	return tool
}

// TestPingProcRun runs the ping-pong variant that runs `skb pingpong
// --server` and `skb pingpong` as processes of their own, briefly, blocking
// and busy-polling: every figure comes back, the tail no shorter than the
// median.
func TestPingProcRun(t *testing.T) {
	tool := buildTool(t)
	e := &env{opts: Options{Tool: tool}, dur: 200 * time.Millisecond, sender: 0, receiver: 1}
	if runtime.NumCPU() < 2 {
		e.sender, e.receiver = NoPin, NoPin
	}
	for _, busy := range []bool{false, true} {
		s, err := pingProcRun(300, busy)(context.Background(), e)
		if err != nil {
			t.Fatalf("busy %v: %v", busy, err)
		}
		if s["p50"] <= 0 || s["p99"] < s["p50"] || s["mean"] <= 0 {
			t.Errorf("busy %v: sample %v", busy, s)
		}
	}
}

// TestUDPProcRun runs the UDP loopback variants that run `skb pktgen` and
// `skb sink` as processes of their own, briefly: burst 64 and GSO with GRO.
// Every figure of both sides comes back.
func TestUDPProcRun(t *testing.T) {
	tool := buildTool(t)
	e := &env{opts: Options{Tool: tool}, dur: 200 * time.Millisecond, sender: 0, receiver: 1}
	if runtime.NumCPU() < 2 {
		e.sender, e.receiver = NoPin, NoPin
	}
	for _, tc := range []struct {
		name      string
		sink, gen []string
	}{
		{"burst 64", []string{"--sleep", "0"}, []string{"--burst", "64"}},
		{"GSO + GRO", []string{"--gro"}, []string{"--burst", "64", "--gso"}},
	} {
		s, err := udpProcRun(tc.sink, tc.gen)(context.Background(), e)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, m := range []Metric{mTxPPS, mRxPPS, mTxCPU, mRxCPU} {
			if s[m.Name] <= 0 {
				t.Errorf("%s: %s is %v; want a positive figure (sample %v)", tc.name, m.Name, s[m.Name], s)
			}
		}
	}
}

// TestListeningPort reads the port a server says it bound, and says so
// when the server exits first.
func TestListeningPort(t *testing.T) {
	e := &env{sender: NoPin, receiver: NoPin}
	for _, tc := range []struct {
		script, port, err string
	}{
		{"echo 'skb: pingpong: listening on 0.0.0.0:40123' >&2; exec sleep 5", "40123", ""},
		{"echo 'pingpong: --listen: in use' >&2; exit 1", "", "exited before it was bound: pingpong: --listen: in use"},
	} {
		p, err := e.startProc(context.Background(), NoPin, nil, "fake server", "/bin/sh", "-c", tc.script)
		if err != nil {
			t.Fatal(err)
		}
		port, err := listeningPort(p, 3*time.Second)
		p.stop()
		if port != tc.port || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: port %q, error %v", tc.script, port, err)
		}
	}
}

// TestToolResult reads the result object out of a tool's --json output and
// says so when there is none.
func TestToolResult(t *testing.T) {
	out := `{"type":"interval","packets":10,"pps":10}
{"type":"result","packets":1000,"pps":2000.5,"cpu_user":0.25,"cpu_sys":0.75}
`
	r, err := toolResult(out, "skb sink")
	if err != nil || r.Packets != 1000 || r.PPS != 2000.5 || r.cpuPer() != 1e6 {
		t.Fatalf("toolResult: %+v, %v; cpu per packet %v", r, err, r.cpuPer())
	}
	if _, err := toolResult(`{"type":"interval"}`+"\nskb: sink: oops\n", "skb sink"); !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), "skb sink") {
		t.Fatalf("no result object: %v", err)
	}
}
