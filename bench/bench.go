package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skbdev/skb/pool"
)

// Defaults of Options.
const (
	// DefaultDuration is how long each run of a variant sends. With
	// DefaultRuns it makes the default selection take a minute and a half on
	// two CPUs.
	DefaultDuration = time.Second
	// DefaultRuns is how many times each variant runs; the median is
	// reported.
	DefaultRuns = 3
	// MaxDuration bounds Options.Duration: every send loop is bounded.
	MaxDuration = time.Minute
	// MaxRuns bounds Options.Runs.
	MaxRuns = 100
)

// Options selects and shapes a run. The zero value runs the default
// experiments (those needing neither a lab nor the C references) for
// DefaultDuration, DefaultRuns times each, sender on CPU 0 and receiver on
// CPU 1.
type Options struct {
	// Duration is how long each run of a variant sends (0 means
	// DefaultDuration, at most MaxDuration). Hermetic memring runs use a
	// quarter of it; ping-pong runs bound their iterations by it.
	Duration time.Duration

	// Runs is how many times each variant runs, interleaved with the
	// other variants of its experiment (0 means DefaultRuns).
	Runs int

	// Only names the experiments to run; empty runs every experiment the
	// other options allow. Naming a lab or C reference experiment without
	// Lab or RefDir is ErrConfig.
	Only []string

	// Lab adds the experiments in a two-namespace veth lab (AF_PACKET,
	// AF_XDP), made by Run and removed before it returns, also on failure
	// or when ctx is cancelled. It needs root: ErrNeedRoot otherwise.
	Lab bool

	// RefDir is a directory holding the C reference programs (udp_send,
	// udp_recv, pingpong, and for the lab afp_send, afp_recv, xsk_tx,
	// xsk_rx); when set, the c-* experiments run them beside skb. Empty
	// leaves them out.
	RefDir string

	// Tool is the path of the skb tool, for the variants that run skb's
	// sender and receiver as processes of their own (`skb pktgen`, `skb
	// sink`), each pinned to its CPU as the C programs run: the skb command
	// sets it to itself. Empty leaves those variants out.
	Tool string

	// SenderCPU and ReceiverCPU are the CPUs the sending and the
	// receiving thread (and C program) are pinned to. NoPin leaves a side
	// unpinned; both zero means CPU 0 and CPU 1, unpinned on a machine
	// with one CPU.
	SenderCPU, ReceiverCPU int

	// Progress, when set, is called after every run with a line saying
	// what it measured, for a caller to show.
	Progress func(line string)

	// OnRows, when set, is called with each experiment's rows as soon as
	// the experiment ends, in the order Run returns them, so that a caller
	// can stream them (skb bench --json does). The slice is the caller's
	// to keep.
	OnRows func(rows []Row)
}

// NoPin, as Options.SenderCPU or ReceiverCPU, leaves that side unpinned.
const NoPin = -1

// Metric is one figure an experiment reports.
type Metric struct {
	Name  string // such as "rx pps"
	Unit  string // such as "pps", "us", "ns/pkt"
	Lower bool   // lower is better (latency, cost); otherwise higher is
	// NoRatio: the figure is a count held to an absolute target (heap
	// allocations, reallocations per packet), for which a ratio means
	// nothing; its rows have no ratio.
	NoRatio bool
	Doc     string // what it counts
}

// Target is a goal for a row: a bound on its ratio, or with Abs on its
// value. Zero bounds are not checked.
type Target struct {
	Min, Max float64
	Abs      bool // bound the value, not the ratio
}

// String returns the target as the table prints it, such as ">=0.90x" or
// "<0.01".
func (t Target) String() string {
	suffix := "x"
	if t.Abs {
		suffix = ""
	}
	switch {
	case t.Min != 0 && t.Max != 0:
		return fmt.Sprintf("%g..%g%s", t.Min, t.Max, suffix)
	case t.Min != 0:
		return fmt.Sprintf(">=%.2f%s", t.Min, suffix)
	case t.Max != 0:
		return fmt.Sprintf("<=%.2f%s", t.Max, suffix)
	}
	return ""
}

func (t Target) set() bool { return t.Min != 0 || t.Max != 0 }

// check reports whether v (the ratio, or the value with Abs) meets t.
func (t Target) check(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	if t.Min != 0 && v < t.Min {
		return false
	}
	if t.Max != 0 && v > t.Max {
		return false
	}
	return true
}

// Row is one variant's figure for one metric: the median of its runs and its
// ratio to the reference variant. It is what the table prints as a line and
// the JSON output as an object.
type Row struct {
	Experiment string `json:"experiment"`
	Seed       string `json:"seed,omitempty"` // "000" to "004", or "" for a claim of the product
	Variant    string `json:"variant"`
	Metric     string `json:"metric"`
	// Value is the median of the runs, in Unit.
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Ratio is the median, over the rounds, of the variant's value over
	// its reference's in the same round (each round runs every variant
	// once, back to back, so that a machine whose speed shifts between
	// rounds is compared with itself); Value over the reference's Value
	// when no round gave both. It is 1 for a reference, nil when it is
	// undefined (the reference failed, or is 0).
	Ratio *float64 `json:"ratio"`
	// Reference names the variant Ratio is relative to; empty for a
	// reference.
	Reference string `json:"reference,omitempty"`
	// Better is "higher" or "lower".
	Better string `json:"better"`
	// Runs is the number of runs that gave a value; Min, Max and Stddev
	// are over them, Samples lists them in the order they ran.
	Runs    int       `json:"runs"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Stddev  float64   `json:"stddev"`
	Samples []float64 `json:"samples"`
	// Target is the goal the row is held to ("" when none), and Met
	// whether Ratio meets it (Value for a target on the figure itself,
	// such as allocations per packet); Met is nil when that is undefined
	// (the reference failed): the table says "unknown".
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
	// Noise is set when the difference may be noise: the ratios of the
	// rounds that gave both variants a value lie on both sides of 1 (one
	// round says better, another worse; rounds at exactly 1 are on
	// neither), or, with fewer than two such rounds, the ranges of the two
	// variants' runs overlap (more than in one point).
	Noise bool `json:"noise,omitempty"`
	// Error is why the variant gave no value (then Runs is 0); or, in a
	// row of its own after the variant's figures, why its runs stopped
	// before the last round (the figures are of the runs before).
	Error string `json:"error,omitempty"`
}

// Report is the result of Run: the rows of every experiment that ran, in
// order, and what they ran on.
type Report struct {
	Start    time.Time     `json:"start"`
	Elapsed  time.Duration `json:"elapsed"`
	Duration time.Duration `json:"duration"` // per run
	Runs     int           `json:"runs"`
	Machine  Machine       `json:"machine"`
	Rows     []Row         `json:"rows"`
	// Experiments lists the experiments that ran, with their titles.
	Experiments []Experiment `json:"experiments"`
}

// Failed returns the rows that carry an error.
func (r *Report) Failed() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Error != "" {
			out = append(out, row)
		}
	}
	return out
}

// Machine describes where a report was measured.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPU       string `json:"cpu"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go"`
	Load      string `json:"load"` // /proc/loadavg at the start
	// Busy is the share of all CPUs in use over the half second before
	// the run (from /proc/stat), in percent; -1 when unknown. On a shared
	// machine it says whether others were running: figures taken while
	// they did are weaker.
	Busy int `json:"busy_percent"`
	// Others is the share of all CPU time other programs used (or the
	// hypervisor stole) while the run went on, in percent; -1 when
	// unknown. Above a few percent the figures are weaker, and the run
	// is worth repeating.
	Others   int    `json:"others_percent"`
	Hostname string `json:"hostname,omitempty"`
}

// Experiment describes one experiment.
type Experiment struct {
	Name  string `json:"name"`
	Seed  string `json:"seed,omitempty"`
	Title string `json:"title"`
	// Shows says what the experiment measures and why it shows the seed or
	// claim.
	Shows string `json:"shows"`
	// Lab and Ref say whether it needs Options.Lab or Options.RefDir.
	Lab bool `json:"lab,omitempty"`
	Ref bool `json:"ref,omitempty"`
	// refProgs names the reference programs a Ref experiment runs.
	refProgs []string
	// Default is whether it runs when Options.Only is empty.
	Default bool     `json:"-"`
	Metrics []Metric `json:"metrics"`
	// Plot is the index in Metrics of the metric WritePlots charts: the
	// one that shows the experiment's effect (0, the first, by default).
	Plot int `json:"-"`

	variants func(e *env) []variant
}

// variant is one arm of an experiment.
type variant struct {
	name    string
	ref     string            // the variant its ratio is relative to; "" for a reference
	targets map[string]Target // per metric
	run     func(ctx context.Context, e *env) (sample, error)
}

// sample is what one run measured: metric name to value.
type sample map[string]float64

// env is what variants run with.
type env struct {
	opts     Options
	dur      time.Duration
	sender   int
	receiver int
	refDir   string
	lab      *labEnv
	// pool is the pool the socket runs share, made at the first use and
	// closed at the end of Run: its arenas stay mapped and faulted in from
	// run to run, as in a program that runs for long.
	pool *pool.Pool
}

// sharedPool returns the pool the socket runs share.
func (e *env) sharedPool() (*pool.Pool, error) {
	if e.pool == nil {
		p, err := pool.New(pool.Config{Name: "bench"})
		if err != nil {
			return nil, err
		}
		e.pool = p
	}
	return e.pool, nil
}

// close releases what the runs shared.
func (e *env) close() {
	if e.pool != nil {
		_ = e.pool.Close()
		e.pool = nil
	}
}

// warmUp runs a short loopback flow whose figures are thrown away, so that
// the first variant measured does not pay for the first faults of the
// shared pool's arenas and the first wake-ups of idle CPUs.
func (e *env) warmUp(ctx context.Context) {
	saved := e.dur
	e.dur = max(saved/4, 50*time.Millisecond)
	_, _ = runUDP(ctx, e, udpFlow{size: 64, burst: 64, gso: true, gro: true})
	e.dur = saved
}

// Experiments returns every experiment, in the order Run runs them.
func Experiments() []Experiment {
	return slices.Clone(catalog())
}

// resolve fills in the defaults of o and checks it.
func (o *Options) resolve() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Runs == 0 {
		o.Runs = DefaultRuns
	}
	switch {
	case o.Duration < 0 || o.Duration > MaxDuration:
		return bad("duration %v: want more than 0 and at most %v", o.Duration, MaxDuration)
	case o.Runs < 0 || o.Runs > MaxRuns:
		return bad("%d runs: want 1 to %d", o.Runs, MaxRuns)
	}
	if o.SenderCPU == 0 && o.ReceiverCPU == 0 {
		o.SenderCPU, o.ReceiverCPU = 0, 1
		if runtime.NumCPU() < 2 {
			o.SenderCPU, o.ReceiverCPU = NoPin, NoPin
		}
	}
	for _, c := range []int{o.SenderCPU, o.ReceiverCPU} {
		if c < NoPin || c >= runtime.NumCPU() {
			return bad("CPU %d: this machine has CPUs 0 to %d (or -1: unpinned)", c, runtime.NumCPU()-1)
		}
	}
	return nil
}

// selection returns the experiments o selects.
func (o *Options) selection() ([]Experiment, error) {
	all := catalog()
	if len(o.Only) == 0 {
		var out []Experiment
		for _, x := range all {
			if x.Default || x.Lab && o.Lab && (!x.Ref || o.RefDir != "") || !x.Lab && x.Ref && o.RefDir != "" {
				out = append(out, x)
			}
		}
		return out, nil
	}
	var out []Experiment
	for _, name := range o.Only {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(x Experiment) bool { return x.Name == name })
		if i < 0 {
			var names []string
			for _, x := range all {
				names = append(names, x.Name)
			}
			return nil, fmt.Errorf("%w: no experiment %q (have %s)", ErrConfig, name, strings.Join(names, ", "))
		}
		x := all[i]
		switch {
		case x.Lab && !o.Lab:
			return nil, fmt.Errorf("%w: experiment %s needs --lab", ErrConfig, name)
		case x.Ref && o.RefDir == "":
			return nil, fmt.Errorf("%w: experiment %s needs --ref DIR", ErrConfig, name)
		}
		if !slices.ContainsFunc(out, func(y Experiment) bool { return y.Name == name }) {
			out = append(out, x)
		}
	}
	// Keep the catalog's order.
	slices.SortStableFunc(out, func(a, b Experiment) int {
		return slices.IndexFunc(all, func(x Experiment) bool { return x.Name == a.Name }) -
			slices.IndexFunc(all, func(x Experiment) bool { return x.Name == b.Name })
	})
	return out, nil
}

// Run runs the experiments opts selects and returns their rows. A variant
// that fails gives a row with Error set and the others go on; the error
// returned is for the run as a whole: ErrConfig, ErrNeedRoot, ErrNoRef, a
// lab that could not be made, or ctx's error when it was cancelled (the
// report then holds what was measured). A lab made for the run is removed
// before Run returns.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	exps, err := opts.selection()
	if err != nil {
		return nil, err
	}
	e := &env{opts: opts, dur: opts.Duration, sender: opts.SenderCPU, receiver: opts.ReceiverCPU}
	if opts.RefDir != "" {
		if err := checkRefDir(opts.RefDir, exps); err != nil {
			return nil, err
		}
		e.refDir = opts.RefDir
	}
	defer e.close()
	rep := &Report{Start: time.Now(), Duration: opts.Duration, Runs: opts.Runs, Machine: machine()}
	cpu0 := snapCPU()
	defer func() { rep.Machine.Others = othersBusy(cpu0, snapCPU()) }()
	if opts.Lab {
		le, err := newLabEnv()
		if err != nil {
			return nil, err
		}
		e.lab = le
		defer le.close()
	}
	for i, x := range exps {
		if i == 0 {
			e.warmUp(ctx)
		}
		rep.Experiments = append(rep.Experiments, x)
		rows := runExperiment(ctx, e, x)
		rep.Rows = append(rep.Rows, rows...)
		if opts.OnRows != nil && len(rows) > 0 {
			opts.OnRows(slices.Clone(rows))
		}
		if ctx.Err() != nil {
			rep.Elapsed = time.Since(rep.Start)
			return rep, ctx.Err()
		}
	}
	rep.Elapsed = time.Since(rep.Start)
	return rep, nil
}

func (e *env) progress(format string, args ...any) {
	if e.opts.Progress != nil {
		e.opts.Progress(fmt.Sprintf(format, args...))
	}
}

// runExperiment runs x's variants interleaved, opts.Runs times, and returns
// its rows.
func runExperiment(ctx context.Context, e *env, x Experiment) []Row {
	vs := x.variants(e)
	samples := make([][]sample, len(vs))
	rounds := make([][]int, len(vs)) // the round of each sample
	errs := make([]error, len(vs))
	for rep := 0; rep < e.opts.Runs && ctx.Err() == nil; rep++ {
		for i, v := range vs {
			if errs[i] != nil || ctx.Err() != nil {
				continue
			}
			s, err := v.run(ctx, e)
			if err != nil {
				if ctx.Err() == nil {
					errs[i] = err
					e.progress("%s: %s: %v", x.Name, v.name, err)
				}
				continue
			}
			samples[i] = append(samples[i], s)
			rounds[i] = append(rounds[i], rep)
			e.progress("%s: %s [%d/%d] %s", x.Name, v.name, rep+1, e.opts.Runs, x.describe(s))
		}
	}
	return x.rowsByRound(vs, samples, rounds, errs)
}

// describe formats a sample's metrics for a progress line.
func (x Experiment) describe(s sample) string {
	var parts []string
	for _, m := range x.Metrics {
		if v, ok := s[m.Name]; ok {
			if m.Name == m.Unit {
				// "allocs/pkt 0.0000", not "allocs/pkt 0.0000 allocs/pkt".
				parts = append(parts, m.Name+" "+strings.TrimSuffix(FormatValue(v, m.Unit), " "+m.Unit))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s", m.Name, FormatValue(v, m.Unit)))
		}
	}
	return strings.Join(parts, ", ")
}

// stats summarizes the values of one metric over runs.
type stats struct {
	median, min, max, stddev float64
	values                   []float64
}

func summarize(vals []float64) stats {
	s := stats{values: vals}
	if len(vals) == 0 {
		return s
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		s.median = sorted[n/2]
	} else {
		s.median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	s.min, s.max = sorted[0], sorted[n-1]
	var sum float64
	for _, v := range vals {
		sum += v
	}
	mean := sum / float64(n)
	var sq float64
	for _, v := range vals {
		sq += (v - mean) * (v - mean)
	}
	if n > 1 {
		s.stddev = math.Sqrt(sq / float64(n-1))
	}
	return s
}

// rows turns the samples of x's variants into rows: one per variant and
// metric, in the catalog's metric order; sample k of every variant is
// taken as from round k.
func (x Experiment) rows(vs []variant, samples [][]sample, errs []error) []Row {
	return x.rowsByRound(vs, samples, nil, errs)
}

// rowsByRound is rows with the round of each sample (rounds[i][k] for
// samples[i][k]; nil: k).
func (x Experiment) rowsByRound(vs []variant, samples [][]sample, rounds [][]int, errs []error) []Row {
	round := func(i, k int) int {
		if rounds == nil {
			return k
		}
		return rounds[i][k]
	}
	// paired returns the median over the rounds that gave both variant i
	// and variant j a value of metric m of i's value over j's.
	// Figures that are not finite numbers are left out everywhere.
	value := func(s sample, m string) (float64, bool) {
		v, ok := s[m]
		return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	paired := func(i, j int, m string) (stats, bool) {
		of := map[int]float64{}
		for k, s := range samples[j] {
			if v, ok := value(s, m); ok && v != 0 {
				of[round(j, k)] = v
			}
		}
		var rs []float64
		for k, s := range samples[i] {
			if v, ok := value(s, m); ok {
				if ref, ok := of[round(i, k)]; ok {
					rs = append(rs, v/ref)
				}
			}
		}
		return summarize(rs), len(rs) > 0
	}
	metricStats := func(i int, m string) (stats, bool) {
		var vals []float64
		for _, s := range samples[i] {
			if v, ok := value(s, m); ok {
				vals = append(vals, v)
			}
		}
		return summarize(vals), len(vals) > 0
	}
	index := func(name string) int {
		return slices.IndexFunc(vs, func(v variant) bool { return v.name == name })
	}
	var rows []Row
	for i, v := range vs {
		if errs[i] != nil && len(samples[i]) == 0 {
			rows = append(rows, Row{
				Experiment: x.Name, Seed: x.Seed, Variant: v.name, Reference: v.ref,
				Metric: x.Metrics[0].Name, Unit: x.Metrics[0].Unit, Better: better(x.Metrics[0]),
				Error: errs[i].Error(), Samples: []float64{},
			})
			continue
		}
		for _, m := range x.Metrics {
			st, ok := metricStats(i, m.Name)
			if !ok {
				continue
			}
			r := Row{
				Experiment: x.Name, Seed: x.Seed, Variant: v.name, Metric: m.Name,
				Value: st.median, Unit: m.Unit, Reference: v.ref, Better: better(m),
				Runs: len(st.values), Min: st.min, Max: st.max, Stddev: st.stddev, Samples: st.values,
			}
			ratio := math.NaN()
			if m.NoRatio {
				// no ratio
			} else if v.ref == "" {
				ratio = 1
			} else if j := index(v.ref); j >= 0 {
				if rs, ok := metricStats(j, m.Name); ok && rs.median != 0 {
					ratio = st.median / rs.median
					r.Noise = overlap(st, rs)
					if p, ok := paired(i, j, m.Name); ok {
						ratio = p.median
						if len(p.values) >= 2 {
							// Rounds all at 1 (a figure both
							// variants share) are no noise.
							r.Noise = p.min < 1 && 1 < p.max
						}
					}
				}
			}
			if !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
				r.Ratio = &ratio
			}
			if t, ok := v.targets[m.Name]; ok && t.set() {
				r.Target = t.String()
				val := ratio
				if t.Abs {
					val = st.median
				}
				if !math.IsNaN(val) && !math.IsInf(val, 0) {
					met := t.check(val)
					r.Met = &met
				}
			}
			rows = append(rows, r)
		}
		if errs[i] != nil {
			// Runs before the error gave the figures above; the
			// error is a row of its own, so that it counts as failed.
			rows = append(rows, Row{
				Experiment: x.Name, Seed: x.Seed, Variant: v.name, Reference: v.ref,
				Metric: x.Metrics[0].Name, Unit: x.Metrics[0].Unit, Better: better(x.Metrics[0]),
				Error: fmt.Sprintf("stopped after %d good %s: %v", len(samples[i]), plural(len(samples[i]), "run", "runs"), errs[i]), Samples: []float64{},
			})
		}
	}
	return rows
}

// plural returns one for n == 1 and many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// overlap reports whether the ranges of two variants' runs overlap: the
// test of noise when no round gave both a value (Row.Noise). With fewer
// than two runs on either side nothing is known, and it reports false.
func overlap(a, b stats) bool {
	if len(a.values) < 2 || len(b.values) < 2 {
		return false
	}
	return a.min < b.max && b.min < a.max
}

func better(m Metric) string {
	if m.Lower {
		return "lower"
	}
	return "higher"
}

// machine describes the machine the process runs on.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Kernel: runtime.GOOS}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	m.Hostname, _ = os.Hostname()
	m.Busy = cpuBusy(500 * time.Millisecond)
	return m
}

// cpuBusy returns the share of CPU time not idle over d, in percent, from
// the first line of /proc/stat (proc(5)), or -1.
func cpuBusy(d time.Duration) int {
	read := func() (total, idle uint64, ok bool) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, 0, false
		}
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "cpu" {
			return 0, 0, false
		}
		for i, v := range f[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, 0, false
			}
			total += n
			if i == 3 || i == 4 { // idle, iowait
				idle += n
			}
		}
		return total, idle, true
	}
	t0, i0, ok0 := read()
	time.Sleep(d)
	t1, i1, ok1 := read()
	if !ok0 || !ok1 || t1 <= t0 {
		return -1
	}
	return int(100 - 100*(i1-i0)/(t1-t0))
}

// errNoPackets is the error of a run whose engines moved nothing.
func errNoPackets(what string) error {
	return fmt.Errorf("%w: %s moved no packets", ErrNoResult, what)
}

// firstErr returns the first non-nil error, ignoring context cancellation
// when ctx itself is not done (an engine stopped by its own deadline).
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}
