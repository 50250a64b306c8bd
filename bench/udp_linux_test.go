package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunLoopback runs the loopback experiments briefly and checks the
// shape of their rows. It claims no speed.
func TestRunLoopback(t *testing.T) {
	only := []string{"burst", "copybreak", "clone", "alloc", "headroom", "udpconn"}
	rep, err := Run(context.Background(), Options{Duration: 50 * time.Millisecond, Runs: 1, Only: only})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rep, only)
	for _, r := range rep.Rows {
		switch {
		case r.Experiment == "headroom" && r.Metric == "reallocs/pkt" && r.Variant == "headroom 0" && r.Value != 1,
			r.Experiment == "headroom" && r.Metric == "reallocs/pkt" && r.Variant == "headroom 128" && r.Value != 0,
			r.Experiment == "alloc" && r.Metric == "allocs/pkt" && r.Variant == "make([]byte)" && r.Value < 0.9,
			r.Experiment == "copybreak" && r.Metric == "held B/pkt" && strings.HasPrefix(r.Variant, "64 B, copybreak on") && r.Value != 512:
			t.Errorf("row %s / %s / %s = %v", r.Experiment, r.Variant, r.Metric, r.Value)
		}
	}
}

// fakeRef writes stand-ins for the C reference programs into a temporary
// directory: each records its arguments and prints a line of figures as the
// real one does. The pingpong server waits to be killed.
func fakeRef(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	scripts := map[string]string{
		"udp_send": `echo "SEND cpu_user=0.1 pkts=1000 secs=0.1 pps=10000"`,
		"udp_recv": `sleep 0.05; echo "RECV dgrams=900 secs=0.1 pps=9000"`,
		"pingpong": `case "$1" in -S) exec sleep 30;; esac; echo "PINGPONG n=100 size=64 mean_us=55.00 p50_us=50.00 p90_us=60 p99_us=70.00"`,
	}
	for name, body := range scripts {
		sh := "#!/bin/sh\necho \"$@\" >> \"$0.args\"\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(sh), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunRef runs the C reference experiments against stand-ins: the
// programs are found, given their flags, their figures parsed and the
// ratios taken.
func TestRunRef(t *testing.T) {
	dir := fakeRef(t)
	only := []string{"c-udp", "c-pingpong"}
	rep, err := Run(context.Background(), Options{Duration: 50 * time.Millisecond, Runs: 1, Only: only, RefDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rep, only)
	for _, r := range rep.Rows {
		switch {
		case r.Variant == "C sendto" && r.Metric == "rx pps" && r.Value != 9000,
			r.Variant == "C sendto" && r.Metric == "tx pps" && r.Value != 10000,
			r.Variant == "C blocking" && r.Metric == "p50" && r.Value != 50,
			r.Variant == "C busy-poll" && r.Metric == "p99" && r.Value != 70:
			t.Errorf("row %s / %s = %v", r.Variant, r.Metric, r.Value)
		case r.Variant == "skb burst 64" && r.Metric == "rx pps" && (r.Ratio == nil || r.Target != ">=0.95x" || r.Met == nil):
			t.Errorf("row %+v: want a ratio against C and a target", r)
		case (r.Variant == "Go raw syscalls busy-poll" || r.Variant == "Go raw syscalls blocking") &&
			r.Metric == "p50" && (r.Runs == 0 || r.Value <= 0 || r.Ratio == nil):
			// The Go floor runs for real, beside the stand-in C.
			t.Errorf("row %+v: want a measured round trip and a ratio against C", r)
		}
	}
	args, err := os.ReadFile(filepath.Join(dir, "udp_recv.args"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-a 127.0.0.1 -p ", "-b 64 -w -G", "-i 300"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("udp_recv was run with %q, lacking %q", args, want)
		}
	}
	pargs, _ := os.ReadFile(filepath.Join(dir, "pingpong.args"))
	if !strings.Contains(string(pargs), "-S -p ") || !strings.Contains(string(pargs), "-y") {
		t.Errorf("pingpong was run with %q", pargs)
	}
}
