package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skbdev/skb/bench"
)

func init() { rootCmd.AddCommand(benchCmd()) }

// benchOpts are the flags of skb bench.
type benchOpts struct {
	duration time.Duration
	runs     int
	only     []string
	lab      bool
	ref      string
	asJSON   bool
	plot     string
	cpus     string
	list     bool
	quiet    bool
}

func benchCmd() *cobra.Command {
	o := &benchOpts{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the experiments: each seed's switch on and off, measured in one run, with ratios",
		Long: `bench runs skb's experiments: for each of the five seeds (and a few claims of
the product) a set of variants measured in one run, interleaved (A B A B) so
that drift hits all of them, and prints for each variant the median of its
runs and its ratio to its reference variant: the median of its runs' ratios
to the reference's run of the same round. A ratio marked ~ may be noise:
its rounds lie on both sides of 1. Without flags it runs on loopback and in memory, needs no
privileges, and takes a minute and a half on two CPUs.

--lab (root) adds AF_PACKET and AF_XDP experiments in a two-namespace veth lab
that bench makes and removes. --ref DIR runs the C reference programs found in
DIR beside skb on the same paths. bench sends only to loopback and inside the
lab it makes.

SIGINT (Ctrl-C) or SIGTERM stops the experiments: bench prints the rows (and
charts) measured so far (with --json, then a result object with "stopped":
true and the signal), then exits with status 130 or 143 (128 + the signal, as
a shell reports a command a signal ended).`,
		Example: `  skb bench
  skb bench --only burst,copybreak --runs 5 --duration 2s
  skb bench --json > bench.ndjson
  sudo skb bench --lab --ref /tmp/ref --plot docs/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o) },
	}
	fs := cmd.Flags()
	durationVarP(fs, &o.duration, "duration", "t", bench.DefaultDuration, "how long each run of a variant sends (memring runs take a quarter)")
	fs.IntVar(&o.runs, "runs", bench.DefaultRuns, "runs of each variant; the median is reported")
	fs.StringSliceVar(&o.only, "only", nil, "run only these experiments, comma-separated (see --list)")
	fs.BoolVar(&o.lab, "lab", false, "add the AF_PACKET and AF_XDP experiments in a lab of two namespaces (needs root)")
	fs.StringVar(&o.ref, "ref", "", "directory holding the C reference programs (udp_send, udp_recv, pingpong; with --lab afp_send, afp_recv, xsk_tx, xsk_rx): run them beside skb")
	fs.BoolVar(&o.asJSON, "json", false, "print NDJSON: an object per row (\"type\":\"row\", experiment, variant, metric, value, unit, ratio, ...) as each experiment ends, then one with \"type\":\"result\" (rows, failed, seconds, others_percent, stopped, signal)")
	fs.StringVar(&o.plot, "plot", "", "write a PNG bar chart per experiment into this directory (made if missing)")
	fs.StringVar(&o.cpus, "cpus", "0,1", "CPUs of the sender and the receiver, SENDER,RECEIVER (-1: unpinned)")
	fs.BoolVar(&o.list, "list", false, "list the experiments and exit")
	fs.BoolVar(&o.quiet, "quiet", false, "print no progress on standard error")
	return cmd
}

// benchCPUs parses --cpus.
func benchCPUs(s string) (sender, receiver int, err error) {
	a, b, ok := strings.Cut(s, ",")
	if ok {
		sender, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			receiver, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || sender < -1 || receiver < -1 {
		return 0, 0, fmt.Errorf("--cpus %q: want SENDER,RECEIVER, such as 0,1 (-1: unpinned)", s)
	}
	return sender, receiver, nil
}

// runBench runs skb bench; its errors start "bench: ".
func runBench(cmd *cobra.Command, o *benchOpts) error {
	err := runBenchOpts(cmd, o)
	if err != nil && !strings.HasPrefix(err.Error(), "bench: ") {
		var ee *exitError
		if errors.As(err, &ee) {
			return &exitError{code: ee.code, err: fmt.Errorf("bench: %w", ee.err)}
		}
		return fmt.Errorf("bench: %w", err)
	}
	return err
}

func runBenchOpts(cmd *cobra.Command, o *benchOpts) error {
	out := cmd.OutOrStdout()
	if o.list {
		return benchList(out)
	}
	switch {
	case o.duration <= 0 || o.duration > bench.MaxDuration:
		return fmt.Errorf("--duration %v: want more than 0 and at most %v", o.duration, bench.MaxDuration)
	case o.runs < 1 || o.runs > bench.MaxRuns:
		return fmt.Errorf("--runs %d: want 1 to %d", o.runs, bench.MaxRuns)
	case cmd.Flags().Changed("only") && strings.Trim(strings.Join(o.only, ""), " ") == "":
		// An empty list would mean every experiment, as no --only does.
		return errors.New("--only needs at least one experiment name; see --list")
	}
	if o.ref != "" {
		// Checked whatever the selection: a mistyped --ref would
		// otherwise pass unnoticed when no experiment chosen needs it.
		if st, err := os.Stat(o.ref); err != nil || !st.IsDir() {
			return fmt.Errorf("--ref %s: not a directory: want the one holding the C reference programs", o.ref)
		}
	}
	if !cmd.Flags().Changed("cpus") && runtime.NumCPU() < 2 {
		// One CPU to run on (taskset, a container): the default
		// pinning to CPUs 0 and 1 cannot be, so nothing is pinned.
		fmt.Fprintln(cmd.ErrOrStderr(), "skb: bench: one CPU available: the senders and receivers run unpinned, taking turns on it (--cpus -1,-1)")
		o.cpus = "-1,-1"
	}
	sender, receiver, err := benchCPUs(o.cpus)
	if err != nil {
		return err
	}
	if sender == 0 && receiver == 0 {
		return fmt.Errorf("--cpus 0,0: the sender and the receiver need different CPUs (or -1)")
	}
	if sender == bench.NoPin && receiver == bench.NoPin {
		sender, receiver = bench.NoPin, bench.NoPin
	}
	if o.plot != "" {
		if err := os.MkdirAll(o.plot, 0o755); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("--plot %s: %w", o.plot, err)
		}
	}
	opts := bench.Options{
		Duration: o.duration, Runs: o.runs, Only: o.only, Lab: o.lab, RefDir: o.ref,
		SenderCPU: sender, ReceiverCPU: receiver,
	}
	if self, err := os.Executable(); err == nil {
		opts.Tool = self // the variants that run skb pktgen and skb sink as processes
	}
	if !o.quiet {
		errOut := cmd.ErrOrStderr()
		opts.Progress = func(line string) { fmt.Fprintln(errOut, "  "+line) }
	}
	var werr error // of the streamed JSON rows
	if o.asJSON {
		// One experiment's rows as soon as it ends, so that a reader of
		// the stream sees them during a long run.
		opts.OnRows = func(rows []bench.Row) {
			if werr == nil {
				werr = bench.WriteJSONRows(out, rows)
			}
		}
	}
	sc := signalContext()
	defer sc.stop()
	rep, err := bench.Run(sc, opts)
	if rep == nil {
		return err
	}
	if o.asJSON {
		res := bench.NewJSONResult(rep)
		res.Stopped = errors.Is(err, context.Canceled)
		if n := sc.signal(); n != 0 {
			res.Signal = signalName(syscall.Signal(n))
		}
		if werr == nil {
			werr = bench.WriteJSONResult(out, res)
		}
		if werr != nil {
			return werr
		}
	} else if werr := bench.WriteTable(out, rep); werr != nil {
		return werr
	}
	if o.plot != "" {
		files, perr := bench.WritePlots(o.plot, rep)
		if perr != nil {
			return perr
		}
		if !o.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d %s to %s\n", len(files), plural(len(files), "chart", "charts"), o.plot)
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		if ierr := sc.interrupted("bench"); ierr != nil {
			return ierr
		}
		return err
	case err != nil:
		return err
	}
	if f := rep.Failed(); len(f) > 0 {
		if len(f) == 1 {
			return fmt.Errorf("bench: 1 variant failed, %s / %s: %s", f[0].Experiment, f[0].Variant, f[0].Error)
		}
		return fmt.Errorf("bench: %d variants failed, first %s / %s: %s", len(f), f[0].Experiment, f[0].Variant, f[0].Error)
	}
	return nil
}

// benchList prints the experiments.
func benchList(w interface{ Write([]byte) (int, error) }) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXPERIMENT\tSEED\tNEEDS\tWHAT")
	for _, x := range bench.Experiments() {
		var needs []string
		if x.Lab {
			needs = append(needs, "--lab")
		}
		if x.Ref {
			needs = append(needs, "--ref")
		}
		seed := x.Seed
		if seed == "" {
			seed = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.Name, seed, strings.Join(needs, " "), x.Title)
	}
	return tw.Flush()
}

// plural returns one when n is 1 and many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
