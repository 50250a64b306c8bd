package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skbdev/skb/pool"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		vals                     []float64
		median, min, max, stddev float64
	}{
		{[]float64{3}, 3, 3, 3, 0},
		{[]float64{3, 1, 2}, 2, 1, 3, 1},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4, math.Sqrt(5.0 / 3)},
	}
	for _, tc := range tests {
		s := summarize(tc.vals)
		if s.median != tc.median || s.min != tc.min || s.max != tc.max || math.Abs(s.stddev-tc.stddev) > 1e-9 {
			t.Errorf("summarize(%v) = %+v, want median %v min %v max %v stddev %v", tc.vals, s, tc.median, tc.min, tc.max, tc.stddev)
		}
	}
	if s := summarize(nil); s.median != 0 || len(s.values) != 0 {
		t.Errorf("summarize(nil) = %+v", s)
	}
}

// fakeExperiment has two metrics, a reference, a variant with targets, one
// compared to a failed reference, and a failed one.
func fakeExperiment() (Experiment, []variant, [][]sample, []error) {
	x := Experiment{Name: "fake", Seed: "002", Title: "a fake", Metrics: []Metric{mPPS, mNs}}
	vs := []variant{
		{name: "a"},
		{name: "b", ref: "a", targets: map[string]Target{mPPS.Name: {Min: 1.5}, mNs.Name: {Max: 50, Abs: true}}},
		{name: "c", ref: "d"},
		{name: "d", ref: "a"},
	}
	samples := [][]sample{
		{{"pps": 100, "ns/pkt": 10}, {"pps": 110, "ns/pkt": 9}, {"pps": 90, "ns/pkt": 11}},
		{{"pps": 200, "ns/pkt": 5}, {"pps": 210, "ns/pkt": 5}, {"pps": 190, "ns/pkt": 5}},
		{{"pps": 100}},
		nil,
	}
	errs := []error{nil, nil, nil, errors.New("boom\nsecond line")}
	return x, vs, samples, errs
}

func TestRows(t *testing.T) {
	x, vs, samples, errs := fakeExperiment()
	rows := x.rows(vs, samples, errs)
	type key struct{ v, m string }
	got := map[key]Row{}
	for _, r := range rows {
		got[key{r.Variant, r.Metric}] = r
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6: %+v", len(rows), rows)
	}
	a := got[key{"a", "pps"}]
	if a.Value != 100 || a.Ratio == nil || *a.Ratio != 1 || a.Runs != 3 || a.Min != 90 || a.Max != 110 || a.Reference != "" || a.Better != "higher" {
		t.Errorf("reference row %+v", a)
	}
	b := got[key{"b", "pps"}]
	if b.Ratio == nil || *b.Ratio != 2 || b.Noise || b.Target != ">=1.50x" || b.Met == nil || !*b.Met {
		t.Errorf("b pps %+v", b)
	}
	bn := got[key{"b", "ns/pkt"}]
	if bn.Ratio == nil || *bn.Ratio != 0.5 || bn.Target != "<=50.00" || bn.Met == nil || !*bn.Met || bn.Better != "lower" {
		t.Errorf("b ns %+v", bn)
	}
	if c := got[key{"c", "pps"}]; c.Ratio != nil || c.Runs != 1 {
		t.Errorf("c, against a failed reference: %+v", c)
	}
	if _, ok := got[key{"c", "ns/pkt"}]; ok {
		t.Error("c has a row for a metric it never measured")
	}
	d := got[key{"d", "pps"}]
	if d.Error != "boom\nsecond line" || d.Runs != 0 || d.Samples == nil {
		t.Errorf("failed variant %+v", d)
	}
}

// TestNoise checks the "~" mark: a variant whose rounds lie on both
// sides of its reference's is noise; one that is steadily below it is not,
// even when one slow run of the reference makes the two ranges overlap;
// with one round only, the ranges decide.
func TestNoise(t *testing.T) {
	x := Experiment{Name: "n", Metrics: []Metric{mPPS}}
	vs := []variant{{name: "a"}, {name: "b", ref: "a"}, {name: "c", ref: "a"}, {name: "d", ref: "a"}}
	samples := [][]sample{
		{{"pps": 100}, {"pps": 120}, {"pps": 60}},
		{{"pps": 95}, {"pps": 130}, {"pps": 66}}, // 0.95, 1.08, 1.10: both sides
		{{"pps": 200}, {"pps": 210}, {"pps": 150}},
		{{"pps": 85}, {"pps": 102}, {"pps": 51}}, // 0.85 each round, overlapping a's range
	}
	rows := x.rows(vs, samples, make([]error, 4))
	if rows[0].Noise || !rows[1].Noise || rows[2].Noise || rows[3].Noise {
		t.Errorf("noise flags %v %v %v %v, want false true false false", rows[0].Noise, rows[1].Noise, rows[2].Noise, rows[3].Noise)
	}
	if s := RatioString(rows[1]); s != "~1.08x" {
		t.Errorf("RatioString = %q", s)
	}
	// One round of b, two of a in other rounds: no pairs to judge by.
	one := x.rowsByRound(vs[:2], [][]sample{{{"pps": 100}, {"pps": 120}}, {{"pps": 110}, {"pps": 115}}}, [][]int{{0, 1}, {2, 3}}, make([]error, 2))
	if !one[1].Noise {
		t.Errorf("no paired rounds, overlapping ranges: noise %v, want true", one[1].Noise)
	}
}

// TestRowsEdges checks rows that must not read as results: a variant
// that failed after good runs gets an error row (counted as failed); a
// figure that is not finite is left out (JSON cannot carry it); a target
// against a failed reference is unknown, not missed; and a ratio just
// under its bound prints with three decimals.
func TestRowsEdges(t *testing.T) {
	x := Experiment{Name: "e", Metrics: []Metric{mPPS}}
	vs := []variant{{name: "a"}, {name: "b", ref: "a", targets: map[string]Target{"pps": {Min: 0.95}}}}
	rows := x.rows(vs, [][]sample{
		{{"pps": 100}, {"pps": 100}},
		{{"pps": 94.99}, {"pps": math.Inf(1)}},
	}, []error{nil, errors.New("no reply")})
	rep := &Report{Rows: rows}
	if len(rep.Failed()) != 1 || !strings.Contains(rep.Failed()[0].Error, "stopped after 2 good runs: no reply") {
		t.Errorf("failed rows %+v", rep.Failed())
	}
	b := rows[1]
	if b.Runs != 1 || b.Value != 94.99 || b.Met == nil || *b.Met {
		t.Errorf("b %+v: want one finite run, target missed", b)
	}
	if s := RatioString(b); s != "0.949x" {
		t.Errorf("RatioString %q, want 0.949x", s)
	}
	c := Row{Ratio: new(1.0501), Target: "<=1.05x", Met: new(false)}
	if s := RatioString(c); s != "1.051x" {
		t.Errorf("RatioString %q, want 1.051x", s)
	}
	// Small ratios keep two significant digits.
	for v, want := range map[float64]string{0.0123: "0.012x", 0.00123: "0.0012x", 0.094: "0.094x", 0.1: "0.10x"} {
		if s := RatioString(Row{Ratio: new(v)}); s != want {
			t.Errorf("RatioString(%v) = %q, want %q", v, s, want)
		}
	}
	// A figure both variants share in every round is no noise.
	same := x.rows([]variant{{name: "a"}, {name: "b", ref: "a"}}, [][]sample{
		{{"pps": 100}, {"pps": 100}, {"pps": 100}},
		{{"pps": 100}, {"pps": 100}, {"pps": 100}},
	}, []error{nil, nil})
	if s := RatioString(same[1]); s != "1.00x" {
		t.Errorf("equal in every round: RatioString %q, want 1.00x without ~", s)
	}
	var buf bytes.Buffer
	if err := WriteJSONRows(&buf, rows); err != nil {
		t.Fatal(err)
	}
	// Against a reference that gave nothing.
	rows = x.rows(vs, [][]sample{{}, {{"pps": 90}}}, []error{errors.New("down"), nil})
	var tb bytes.Buffer
	if err := WriteTable(&tb, &Report{Rows: rows, Runs: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), ">=0.95x unknown") || strings.Contains(tb.String(), "MISSED") {
		t.Errorf("target against a failed reference:\n%s", tb.String())
	}
}

// TestPairedRatio checks that a ratio is the median of the per-round
// ratios: a machine that shifts speed between rounds is compared with
// itself, where the ratio of the medians would compare two speeds; a round
// that gave one variant no value pairs nothing.
func TestPairedRatio(t *testing.T) {
	x := Experiment{Name: "p", Metrics: []Metric{mNs}}
	vs := []variant{{name: "ref"}, {name: "v", ref: "ref"}}
	// The machine is twice as slow in round 1 for ref and in rounds 1
	// and 2 for v: v is 1.1x ref in every round.
	samples := [][]sample{
		{{"ns/pkt": 10}, {"ns/pkt": 20}, {"ns/pkt": 20}},
		{{"ns/pkt": 11}, {"ns/pkt": 22}, {"ns/pkt": 22}},
	}
	if r := x.rows(vs, samples, make([]error, 2))[1]; r.Ratio == nil || math.Abs(*r.Ratio-1.1) > 1e-9 {
		t.Errorf("ratio %v, want 1.1", r.Ratio)
	}
	// Rounds: 1.1, 0.55, 1.1: the median is 1.1, where the medians
	// (11 and 20) would give 0.55.
	samples = [][]sample{
		{{"ns/pkt": 10}, {"ns/pkt": 20}, {"ns/pkt": 20}},
		{{"ns/pkt": 11}, {"ns/pkt": 11}, {"ns/pkt": 22}},
	}
	if r := x.rows(vs, samples, make([]error, 2))[1]; r.Ratio == nil || math.Abs(*r.Ratio-1.1) > 1e-9 {
		t.Errorf("ratio %v, want 1.1 (median of 1.1, 0.55, 1.1)", r.Ratio)
	}
	// v failed in round 0: its samples are of rounds 1 and 2.
	rows := x.rowsByRound(vs, [][]sample{samples[0], samples[1][1:]}, [][]int{{0, 1, 2}, {1, 2}}, make([]error, 2))
	if r := rows[1]; r.Ratio == nil || math.Abs(*r.Ratio-(0.55+1.1)/2) > 1e-9 {
		t.Errorf("ratio %v over rounds 1 and 2, want %v", r.Ratio, (0.55+1.1)/2)
	}
}

func TestTargetString(t *testing.T) {
	tests := []struct {
		t    Target
		want string
		v    float64
		ok   bool
	}{
		{Target{Min: 0.9}, ">=0.90x", 0.95, true},
		{Target{Min: 0.9}, ">=0.90x", 0.85, false},
		{Target{Max: 1.05}, "<=1.05x", 1.06, false},
		{Target{Max: 0.01, Abs: true}, "<=0.01", 0, true},
		{Target{Min: 1, Max: 2}, "1..2x", 1.5, true},
		{Target{Min: 1}, ">=1.00x", math.NaN(), false},
	}
	for _, tc := range tests {
		if s := tc.t.String(); s != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.t, s, tc.want)
		}
		if ok := tc.t.check(tc.v); ok != tc.ok {
			t.Errorf("%+v.check(%v) = %v", tc.t, tc.v, ok)
		}
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{274000, "pps", "274.0 kpps"},
		{16.6e6, "pps", "16.60 Mpps"},
		{812, "pps", "812 pps"},
		{52.34, "us", "52.34 us"},
		{3021.7, "ns/pkt", "3022 ns/pkt"},
		{0, "allocs/pkt", "0.0000 allocs/pkt"},
		{4.912, "us", "4.912 us"},
		{math.NaN(), "us", "-"},
	}
	for _, tc := range tests {
		if got := FormatValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

func TestParseFigures(t *testing.T) {
	out := "xsk rx ready\nRECV cpu_user=0.120 cpu_sys=1.900 nvcsw=12 dgrams=1096000 calls=17125 secs=4.000 pps=274012 per_call=64.00 mode=drv\nXSKSTAT rx_dropped=0\n"
	f, err := parseFigures(out, "RECV")
	if err != nil {
		t.Fatal(err)
	}
	if f["pps"] != 274012 || f["dgrams"] != 1096000 || f["cpu_sys"] != 1.9 {
		t.Errorf("figures %v", f)
	}
	if _, ok := f["mode"]; ok {
		t.Error("a word value was taken as a number")
	}
	if _, err := parseFigures("SEND FAILED step=open errno=16", "RECV"); !errors.Is(err, ErrNoResult) {
		t.Errorf("missing line: %v, want ErrNoResult", err)
	}
	// Other notations than decimal, and numbers out of range, are no
	// figures; a negative figure or a key given twice fails the line.
	f, err = parseFigures("PINGPONG p50_us=0x1p4 p99_us=1_000 mean_us=1e999 n=+5 max_us=.5 min_us=2.", "PINGPONG")
	if err != nil || len(f) != 3 || f["n"] != 5 || f["max_us"] != 0.5 || f["min_us"] != 2 {
		t.Errorf("figures %v, %v; want n, max_us and min_us alone", f, err)
	}
	for line, want := range map[string]string{
		"PINGPONG p50_us=10 p99_us=-5":      "gives p99_us=-5: want a number, 0 or more",
		"PINGPONG p50_us=10 p50_us=99999":   "gives p50_us twice",
		"SEND pps=100 cpu_user=-0.1 pkts=9": "gives cpu_user=-0.1",
	} {
		if _, err := parseFigures(line, strings.Fields(line)[0]); !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want ErrNoResult saying %q", line, err, want)
		}
	}
}

// FuzzParseFigures checks that no reference program's output, however
// broken, makes parseFigures panic or hand back a figure that is not a
// finite number, 0 or more, and that oneLine quotes any of it in a short
// line.
func FuzzParseFigures(f *testing.F) {
	for _, s := range []string{
		"RECV cpu_user=0.120 cpu_sys=1.900 dgrams=1096000 secs=4.000 pps=274012 mode=drv\n",
		"PINGPONG n=100 p50_us=10 p99_us=-5 p50_us=3 mean_us=1e999 max_us=0x1p4 min_us=.5\n",
		"x\nSEND pps=nan pkts=1_000 cpu_user=+2. =7 k= \xff\xfe\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		for _, word := range []string{"RECV", "SEND", "PINGPONG"} {
			m, err := parseFigures(out, word)
			if err != nil {
				if !errors.Is(err, ErrNoResult) {
					t.Fatalf("%s: %v, want ErrNoResult", word, err)
				}
				continue
			}
			for k, v := range m {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("%s: %s=%v", word, k, v)
				}
			}
		}
		if q := oneLine(out); len(q) > maxLineQuote+len("...") || strings.Contains(q, "\n") {
			t.Fatalf("oneLine gave %d bytes: %.80q", len(q), q)
		}
	})
}

// TestCFiguresImplausible checks that figures no measurement gives (a rate
// over a billion packets a second, round trips under 10 ns or over 1000
// s, a p99 under the p50, no round trips) fail the run, naming the figure.
func TestCFiguresImplausible(t *testing.T) {
	if _, err := ppsOf(map[string]float64{"pps": 3e15}, "SEND", "the C sender"); !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), "not a measurement") {
		t.Errorf("pps=3e15: %v", err)
	}
	if _, err := ppsOf(map[string]float64{"pps": 1e-300}, "RECV", "the C receiver"); !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), "counted nothing") {
		t.Errorf("pps=1e-300: %v", err)
	}
	if v, err := ppsOf(map[string]float64{"pps": 2.5e7}, "RECV", "the C receiver"); err != nil || v != 2.5e7 {
		t.Errorf("pps=2.5e7: %v, %v", v, err)
	}
	for _, tc := range []struct {
		f    map[string]float64
		want string
	}{
		{map[string]float64{"n": 0, "p50_us": 10}, "n=0"},
		{map[string]float64{"p50_us": 1e308}, "p50_us=1e+308"},
		{map[string]float64{"p50_us": 1e-320}, "p50_us=1e-320"},
		{map[string]float64{"p50_us": 10, "mean_us": 1e-300}, "mean_us=1e-300"},
		{map[string]float64{"p50_us": 10, "p99_us": 2}, "p99_us=2 under its p50_us=10"},
		{map[string]float64{"n": 100, "p50_us": 10, "p99_us": 20, "mean_us": 12}, ""},
	} {
		s := sample{"p50": tc.f["p50_us"]}
		for k, m := range map[string]string{"p99_us": "p99", "mean_us": "mean"} {
			if v, ok := tc.f[k]; ok {
				s[m] = v
			}
		}
		err := checkRoundTrips(tc.f, s)
		if (err == nil) != (tc.want == "") || err != nil && (!errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: %v; want an error with %q", tc.f, err, tc.want)
		}
	}
}

// TestCFiguresMissing checks that a reference program's line without its
// rate, or with a rate of 0, is an error rather than a 0 every ratio would
// be taken against, and that CPU figures it lacks are left out, not 0.
func TestCFiguresMissing(t *testing.T) {
	for _, tc := range []struct{ send, recv string }{
		{"SEND pkts=10 secs=1\n", "RECV dgrams=10 pps=10\n"},
		{"SEND pkts=10 pps=10\n", "RECV dgrams=10 secs=1\n"},
		{"SEND pkts=10 pps=0\n", "RECV dgrams=10 pps=10\n"},
	} {
		if s, err := cFigures(tc.send, tc.recv); !errors.Is(err, ErrNoResult) {
			t.Errorf("cFigures(%q, %q) = %v, %v: want ErrNoResult", tc.send, tc.recv, s, err)
		}
	}
	s, err := cFigures("SEND pkts=10 pps=10 cpu_user=0.1 cpu_sys=0.2\n", "RECV dgrams=10 pps=10\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s["rx cpu"]; ok || s["tx cpu"] <= 0 {
		t.Errorf("sample %v: want tx cpu from the SEND line, no rx cpu (its line has none)", s)
	}
}

func TestSelection(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string // nil: an error wrapping ErrConfig
	}{
		{"default", Options{}, []string{"burst", "doorbell", "copybreak", "copybreak-mem", "clone", "clone-mem", "alloc", "headroom", "headroom-mem", "udpconn"}},
		{"only, catalog order", Options{Only: []string{"udpconn", " burst", "burst"}}, []string{"burst", "udpconn"}},
		{"ref", Options{RefDir: "x"}, []string{"burst", "doorbell", "copybreak", "copybreak-mem", "clone", "clone-mem", "alloc", "headroom", "headroom-mem", "udpconn", "c-udp", "c-pingpong"}},
		{"lab", Options{Lab: true, Only: []string{"afxdp-tx"}}, []string{"afxdp-tx"}},
		{"unknown", Options{Only: []string{"nope"}}, nil},
		{"lab without --lab", Options{Only: []string{"afxdp"}}, nil},
		{"ref without --ref", Options{Only: []string{"c-udp"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			xs, err := tc.opts.selection()
			if tc.want == nil {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("err %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, x := range xs {
				names = append(names, x.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("selected %v, want %v", names, tc.want)
			}
		})
	}
	lab := 0
	for _, x := range Experiments() {
		if x.Lab {
			lab++
		}
		if len(x.Metrics) == 0 || x.Title == "" || x.Shows == "" {
			t.Errorf("experiment %s lacks metrics, title or description", x.Name)
		}
	}
	if lab == 0 {
		t.Error("no lab experiments")
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Duration: -time.Second},
		{Duration: 2 * MaxDuration},
		{Runs: -1},
		{SenderCPU: 1 << 20, ReceiverCPU: 1},
		{Only: []string{"nope"}},
	} {
		if _, err := Run(context.Background(), o); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", o, err)
		}
	}
	if _, err := Run(context.Background(), Options{RefDir: t.TempDir(), Only: []string{"c-udp"}}); !errors.Is(err, ErrNoRef) {
		t.Errorf("empty ref dir: %v, want ErrNoRef", err)
	}
	// Only the programs of the selected experiments are needed: a
	// directory with pingpong alone serves c-pingpong, not c-udp.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pingpong"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := &Options{RefDir: dir, Only: []string{"c-pingpong"}}
	exps, err := o.selection()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRefDir(dir, exps); err != nil {
		t.Errorf("c-pingpong with pingpong at hand: %v", err)
	}
	o.Only = []string{"c-udp", "c-pingpong"}
	exps, _ = o.selection()
	if err := checkRefDir(dir, exps); !errors.Is(err, ErrNoRef) || !strings.Contains(err.Error(), "missing udp_send, udp_recv") {
		t.Errorf("c-udp without its programs: %v, want ErrNoRef naming udp_send and udp_recv", err)
	}
	// A directory, or a file without an execute bit, is there but cannot run.
	if err := os.Mkdir(filepath.Join(dir, "udp_send"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "udp_recv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkRefDir(dir, exps); !errors.Is(err, ErrNoRef) || !strings.HasSuffix(err.Error(), ": not an executable file: udp_send, udp_recv") {
		t.Errorf("c-udp with a directory and a plain file: %v", err)
	}
}

func fakeReport() *Report {
	x, vs, samples, errs := fakeExperiment()
	return &Report{
		Start: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Duration: time.Second, Runs: 3,
		Machine:     Machine{CPUs: 2, CPU: "AMD EPYC", Kernel: "Linux 6.18", GoVersion: "go1.26", Load: "0.1 0.2 0.3", Busy: 3, Others: 1},
		Experiments: []Experiment{x},
		Rows:        x.rows(vs, samples, errs),
	}
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, fakeReport()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"machine: 2 x AMD EPYC, Linux 6.18, go1.26, load 0.1 0.2 0.3, CPUs busy before the start 3%",
		"reading it: higher is better for rates (pps, Mbit/s), lower for times",
		"~ marks a ratio whose rounds lie on both sides of 1",
		"EXPERIMENT  VARIANT  METRIC  MEDIAN",
		"# fake (seed 002): a fake",
		"fake        a        pps     100 pps",
		"2.00x",
		">=1.50x ok",
		"error: boom",
		"6 rows",
		"1 failed",
		"other programs used 1% of the CPUs meanwhile",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "second line") {
		t.Errorf("an error's second line was printed:\n%s", out)
	}
	// The first line says how many runs each median is of; one run has
	// no median.
	for _, tc := range []struct {
		runs int
		want string
	}{{3, "skb bench: medians of 3 runs of "}, {1, "skb bench: one run of "}} {
		rep := fakeReport()
		rep.Runs = tc.runs
		buf.Reset()
		if err := WriteTable(&buf, rep); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(buf.String(), tc.want) {
			t.Errorf("%d runs: first line %q", tc.runs, strings.SplitN(buf.String(), "\n", 2)[0])
		}
	}
}

func TestWritePlots(t *testing.T) {
	dir := t.TempDir()
	files, err := WritePlots(dir, fakeReport())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0] != filepath.Join(dir, "fake.png") {
		t.Fatalf("files %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s is not a PNG", files[0])
	}
}

func TestHeapAlloc(t *testing.T) {
	p, err := pool.New(pool.Config{Name: "test heap"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := p.NewCache()
	defer c.Close()
	h := newHeapAlloc(skbHeadroom)
	for i := range 3 {
		b, err := h.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		if b.Headroom() != skbHeadroom || b.Tailroom() != 64 {
			t.Fatalf("headroom %d tailroom %d", b.Headroom(), b.Tailroom())
		}
		copy(b.Put(64), "payload")
		if i == 1 {
			b.Free()
		} else {
			c.Free(b) // as a driver frees: into its cache, which sends it home
		}
	}
	if len(h.bufs) != 1 || len(h.shared) != 1 {
		t.Errorf("free lists %d %d, want 1 1 (reused)", len(h.bufs), len(h.shared))
	}
	if p.Stats().InFlight() != 0 {
		t.Errorf("the pool counts %d in flight", p.Stats().InFlight())
	}
}

func TestEncapsulator(t *testing.T) {
	for _, hr := range []int{skbHeadroom, 0} {
		p, err := headroomPool(hr)
		if err != nil {
			t.Fatal(err)
		}
		c := p.NewCache()
		enc := newEncapsulator(c)
		b, err := c.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		copy(b.Put(64), "inner")
		if err := enc.push(b); err != nil {
			t.Fatal(err)
		}
		if b.Len() != 64+EncapLen || string(b.Data()[EncapLen:EncapLen+5]) != "inner" || b.Data()[0] != 0x45 {
			t.Errorf("headroom %d: len %d, data % x", hr, b.Len(), b.Data()[:8])
		}
		want := uint64(0)
		if hr == 0 {
			want = 1
		}
		if enc.reallocs != want {
			t.Errorf("headroom %d: %d reallocations, want %d", hr, enc.reallocs, want)
		}
		c.Free(b)
		c.Close()
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestRunMemring runs the hermetic experiments briefly and checks the shape
// of their rows: every variant and metric, the references at 1.
func TestRunMemring(t *testing.T) {
	only := []string{"doorbell", "copybreak-mem", "clone-mem", "headroom-mem"}
	var progress int
	var streamed [][]Row
	rep, err := Run(context.Background(), Options{
		Duration: 20 * time.Millisecond, Runs: 2, Only: only,
		Progress: func(string) { progress++ },
		OnRows:   func(rows []Row) { streamed = append(streamed, rows) },
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rep, only)
	if progress == 0 {
		t.Error("no progress lines")
	}
	// OnRows had each experiment's rows once, as it ended, in order.
	if len(streamed) != len(only) {
		t.Errorf("OnRows called %d times for %d experiments", len(streamed), len(only))
	}
	var all []Row
	for i, rows := range streamed {
		for _, r := range rows {
			if i < len(only) && r.Experiment != only[i] {
				t.Errorf("call %d has a row of %s, want %s", i, r.Experiment, only[i])
			}
		}
		all = append(all, rows...)
	}
	if !reflect.DeepEqual(all, rep.Rows) {
		t.Error("the streamed rows differ from the report's")
	}
	for _, r := range rep.Rows {
		switch {
		case r.Experiment == "headroom-mem" && r.Variant == "headroom 0" && r.Metric == "reallocs/pkt" && r.Value != 1,
			r.Experiment == "headroom-mem" && r.Variant == "headroom 128" && r.Metric == "reallocs/pkt" && r.Value != 0,
			r.Experiment == "copybreak-mem" && r.Variant == "64 B, copybreak on" && r.Metric == "held B/pkt" && r.Value != pool.SmallSize,
			r.Experiment == "copybreak-mem" && r.Variant == "64 B, copybreak off" && r.Metric == "held B/pkt" && r.Value != pool.FrameSize:
			t.Errorf("row %s / %s / %s = %v", r.Experiment, r.Variant, r.Metric, r.Value)
		}
	}
}

// checkRows checks that rep has rows for every variant and metric of the
// named experiments, with no error, a value, and references at ratio 1.
func checkRows(t *testing.T, rep *Report, only []string) {
	t.Helper()
	if len(rep.Experiments) != len(only) {
		t.Errorf("%d experiments ran, want %d", len(rep.Experiments), len(only))
	}
	if f := rep.Failed(); len(f) > 0 {
		for _, r := range f {
			t.Errorf("%s / %s failed: %s", r.Experiment, r.Variant, r.Error)
		}
	}
	seen := map[string]int{}
	for _, r := range rep.Rows {
		seen[r.Experiment]++
		if r.Error != "" {
			continue
		}
		if r.Runs == 0 || len(r.Samples) != r.Runs || math.IsNaN(r.Value) {
			t.Errorf("%s / %s / %s: %d runs, samples %v", r.Experiment, r.Variant, r.Metric, r.Runs, r.Samples)
		}
		noRatio := r.Metric == mAllocs.Name || r.Metric == mRealloc.Name
		if noRatio && r.Ratio != nil {
			t.Errorf("%s / %s / %s: a count with a ratio", r.Experiment, r.Variant, r.Metric)
		}
		if r.Reference == "" && !noRatio && (r.Ratio == nil || *r.Ratio != 1) {
			t.Errorf("%s / %s / %s: a reference with ratio %v", r.Experiment, r.Variant, r.Metric, r.Ratio)
		}
	}
	for _, x := range rep.Experiments {
		if seen[x.Name] < 2*len(x.Metrics) {
			t.Errorf("%s: %d rows, want at least %d", x.Name, seen[x.Name], 2*len(x.Metrics))
		}
	}
}

func TestCPUSnap(t *testing.T) {
	a := snapCPU()
	if !a.ok {
		t.Skip("no /proc/stat")
	}
	b := snapCPU()
	if b.total < a.total {
		t.Errorf("times went back: %d then %d", a.total, b.total)
	}
	if _, ok := b.procs[os.Getpid()]; ok {
		t.Error("this process counted among the others")
	}
	if v := othersBusy(a, a); v != -1 {
		t.Errorf("othersBusy over no time = %d, want -1", v)
	}
	x := cpuSnap{total: 1000, steal: 10, procs: map[int]uint64{1: 50, 2: 70, 3: 5}, ok: true}
	y := cpuSnap{total: 2000, steal: 30, procs: map[int]uint64{1: 150, 2: 70, 4: 30}, ok: true}
	// Of 1000 ticks: pid 1 100, pid 2 none, pid 3 gone (not seen), pid
	// 4 new 30, stolen 20: others 150.
	if v := othersBusy(x, y); v != 15 {
		t.Errorf("othersBusy = %d, want 15", v)
	}
}

// TestOthersSeesABusyProgram runs a program that spins on one CPU beside
// the reading: it must show as others, and a child of this process must
// not be among them (whatever else the machine runs meanwhile, such as
// the other test binaries of go test ./...).
func TestOthersSeesABusyProgram(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	spin := func() *exec.Cmd {
		c := exec.Command("sh", "-c", "end=$(($(date +%s)+2)); while [ $(date +%s) -lt $end ]; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A child of this process: not others.
	a := snapCPU()
	c := spin()
	time.Sleep(500 * time.Millisecond)
	b := snapCPU()
	c.Process.Kill()
	c.Wait()
	if _, ok := b.procs[c.Process.Pid]; ok {
		t.Error("this process's own child counted among the others")
	}
	// A grandchild started by a shell that exits at once: its parent
	// is init, as another program's would be.
	a = snapCPU()
	g := exec.Command("sh", "-c", "(end=$(($(date +%s)+2)); while [ $(date +%s) -lt $end ]; do :; done) & echo $!")
	out, err := g.Output()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	b = snapCPU()
	if pid, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if v := othersBusy(a, b); v < 30/runtime.NumCPU() {
		t.Errorf("a program spinning on one of %d CPUs counted as %d%% others", runtime.NumCPU(), v)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	rep, err := Run(ctx, Options{Duration: time.Second, Only: []string{"doorbell", "headroom-mem"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if rep == nil {
		t.Fatal("no report")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a cancelled run took %v", d)
	}
}

// TestDescribe checks a progress line's figures: each metric's name, then
// its value with its unit, the unit once when it is the metric's name.
func TestDescribe(t *testing.T) {
	x := Experiment{Metrics: []Metric{{Name: "rx pps", Unit: "pps"}, {Name: "allocs/pkt", Unit: "allocs/pkt"}, {Name: "absent", Unit: "ns"}}}
	got := x.describe(sample{"rx pps": 1500, "allocs/pkt": 0})
	if want := "rx pps 1.5 kpps, allocs/pkt 0.0000"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
