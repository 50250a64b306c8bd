package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runBenchCmd runs a fresh `skb bench` in this process with args and
// returns its standard output, standard error and error.
func runBenchCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := benchCmd()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestBenchList(t *testing.T) {
	out, _, err := runBenchCmd(t, "--list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"EXPERIMENT", "burst", "copybreak", "clone", "alloc", "headroom", "udpconn", "c-udp", "--ref", "afxdp-tx", "--lab"} {
		if !strings.Contains(out, want) {
			t.Errorf("--list lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--duration", "2h"}, "--duration"},
		{[]string{"--runs", "0"}, "--runs"},
		{[]string{"--cpus", "zero"}, "--cpus"},
		{[]string{"--cpus", "0,0"}, "--cpus"},
		{[]string{"--cpus", "0,99"}, "CPU 99"},
		{[]string{"--only", "nope"}, `no experiment "nope"`},
		{[]string{"--only", ""}, "bench: --only needs at least one experiment name; see --list"},
		{[]string{"--only="}, "bench: --only needs at least one experiment name; see --list"},
		{[]string{"--only", ","}, "bench: --only needs at least one experiment name; see --list"},
		{[]string{"--only", "c-udp"}, "needs --ref"},
		{[]string{"--only", "afxdp"}, "needs --lab"},
		{[]string{"--ref", "/nonexistent", "--only", "c-udp"}, "--ref /nonexistent: not a directory"},
		{[]string{"--ref", "/nonexistent", "--only", "doorbell"}, "--ref /nonexistent: not a directory"},
		{[]string{"--ref", t.TempDir(), "--only", "c-udp"}, "missing udp_send"},
		{[]string{"--plot", notDir}, "--plot " + notDir + ": not a directory"},
		{[]string{"--plot", filepath.Join(notDir, "sub")}, "--plot " + filepath.Join(notDir, "sub") + ": not a directory"},
		{[]string{"--bogus"}, "unknown flag"},
		{[]string{"extra"}, "unknown command"},
	}
	for _, tc := range tests {
		_, _, err := runBenchCmd(t, tc.args...)
		if err == nil {
			t.Errorf("skb bench %v: no error", tc.args)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") ||
			(!strings.HasPrefix(msg, "bench: ") && !strings.Contains(msg, "unknown")) {
			t.Errorf("skb bench %v: error %q, want one line starting \"bench: \" containing %q", tc.args, msg, tc.want)
		}
	}
}

// TestBenchTableJSONPlot runs two hermetic experiments briefly, as a table,
// as NDJSON and with charts, and checks their shape.
func TestBenchTableJSONPlot(t *testing.T) {
	args := []string{"--only", "doorbell,headroom-mem", "--duration", "20ms", "--runs", "2"}
	out, errOut, err := runBenchCmd(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{`skb bench: medians of 2 runs of 20ms`, `machine: `, `EXPERIMENT +VARIANT +METRIC +MEDIAN +RATIO`,
		`# doorbell \(seed 002\)`, `doorbell +burst 64 +pps +[0-9.]+ [kM]?pps +~?[0-9.]+x +burst 1 +2 `,
		`headroom-mem +headroom 128 +reallocs/pkt +0 reallocs/pkt +- +\(ref\)`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "doorbell: burst 1 [1/2]") {
		t.Errorf("no progress on stderr: %q", errOut)
	}

	dir := filepath.Join(t.TempDir(), "charts", "new") // made by --plot
	out, errOut, err = runBenchCmd(t, append(args, "--json", "--quiet", "--plot", dir)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if errOut != "" {
		t.Errorf("--quiet printed %q", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// doorbell: 2 variants x 2 metrics; headroom-mem: 2 x 3; then the
	// result.
	if len(lines) != 11 {
		t.Fatalf("%d NDJSON lines, want 10 rows and the result:\n%s", len(lines), out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[10]), &res); err != nil {
		t.Fatalf("%v: %s", err, lines[10])
	}
	if res["type"] != "result" || res["rows"] != 10.0 || res["failed"] != 0.0 || res["stopped"] != false || res["signal"] != nil ||
		res["seconds"].(float64) <= 0 {
		t.Errorf("result %v", res)
	}
	for _, l := range lines[:10] {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if row["type"] != "row" {
			t.Errorf("row type %v, want \"row\": %s", row["type"], l)
		}
		for _, k := range []string{"experiment", "variant", "metric", "value", "unit", "ratio", "runs", "min", "max", "stddev"} {
			if _, ok := row[k]; !ok {
				t.Errorf("row lacks %q: %s", k, l)
			}
		}
		if row["runs"].(float64) != 2 {
			t.Errorf("runs %v, want 2: %s", row["runs"], l)
		}
	}
	for _, name := range []string{"doorbell.png", "headroom-mem.png"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("chart %s: %v", name, err)
		}
	}
}

// TestBenchExitStatus checks the built command: a bad flag is one line on
// standard error and exit status 1.
func TestBenchExitStatus(t *testing.T) {
	out, errOut, code := skb(t, "bench", "--runs", "-1")
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "skb: bench: --runs -1") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, one line", code, out, errOut)
	}
}
