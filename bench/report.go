package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// FormatValue formats v in unit as the table prints it: packet rates with k
// and M (10^3, 10^6), others with three or four significant digits and the
// unit.
func FormatValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch unit {
	case "pps":
		switch a := math.Abs(v); {
		case a >= 1e6:
			return fmt.Sprintf("%.2f Mpps", v/1e6)
		case a >= 1e3:
			return fmt.Sprintf("%.1f kpps", v/1e3)
		}
		return fmt.Sprintf("%.0f pps", v)
	case "allocs/pkt":
		return fmt.Sprintf("%.4f %s", v, unit)
	}
	return num(v) + " " + unit
}

// num formats v with about four significant digits, without an exponent.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000 || a == 0:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// spread formats a row's minimum and maximum in its unit.
func spread(r Row) string {
	if r.Runs < 2 {
		return ""
	}
	lo, hi := FormatValue(r.Min, r.Unit), FormatValue(r.Max, r.Unit)
	// Print the unit once: "280.1-290.2 kpps".
	if i, j := strings.LastIndexByte(lo, ' '), strings.LastIndexByte(hi, ' '); i > 0 && j > 0 && lo[i:] == hi[j:] {
		return lo[:i] + "-" + hi
	}
	return lo + " - " + hi
}

// RatioString formats a row's ratio as the table prints it: "1.06x", with
// "~" in front when the difference may be noise (Row.Noise), or "-" when
// undefined. A row that missed its target gets three decimals, cut
// towards the side that misses, so that a ratio just past a bound does not
// print as the bound ("0.949x", not "0.95x", for 0.9499 against >=0.95x).
func RatioString(r Row) string {
	if r.Ratio == nil {
		return "-"
	}
	s := fmt.Sprintf("%.2fx", *r.Ratio)
	switch {
	case *r.Ratio > 0 && *r.Ratio < 0.095:
		// Two significant digits, which two decimals would lose
		// ("0.012x", not "0.01x").
		d := min(2-int(math.Floor(math.Log10(*r.Ratio))), 8)
		s = fmt.Sprintf("%.*fx", d-1, *r.Ratio)
	case *r.Ratio >= 100:
		s = fmt.Sprintf("%.0fx", *r.Ratio)
	case r.Met != nil && !*r.Met:
		// Cut towards the side that misses, so that it never prints
		// as its bound: 0.9499 against >=0.95x is 0.949x.
		v := *r.Ratio * 1000
		if strings.HasPrefix(r.Target, "<") {
			v = math.Ceil(v)
		} else {
			v = math.Floor(v)
		}
		s = fmt.Sprintf("%.3fx", v/1000)
	}
	if r.Noise {
		s = "~" + s
	}
	return s
}

// WriteTable writes rep as a text table: a header naming the machine and the
// settings, then one line per row, grouped by experiment, each experiment
// introduced by its title. Rows with a target end with "ok", "MISSED" or
// "unknown" (no ratio); a ratio marked "~" may be noise (Row.Noise).
func WriteTable(w io.Writer, rep *Report) error {
	m := rep.Machine
	runs := fmt.Sprintf("medians of %d runs of %v each, variants interleaved", rep.Runs, rep.Duration)
	if rep.Runs == 1 {
		runs = fmt.Sprintf("one run of %v each", rep.Duration)
	}
	fmt.Fprintf(w, "skb bench: %s; ratio = median of the runs' ratios to the reference (vs) in the same round\n", runs)
	fmt.Fprintln(w, "reading it: higher is better for rates (pps, Mbit/s), lower for times, CPU per packet, bytes held and reallocations; ~ marks a ratio whose rounds lie on both sides of 1 (it may be noise); TARGET is a goal and whether the row met it (a missed one with three decimals, cut towards the miss)")
	fmt.Fprintln(w, "terms: (seed NNN) is the kernel patch the experiment shows (docs/BENCHMARKS.md); GC/Mpkt garbage collections per million packets; reallocs/pkt header reallocations per packet; held B/pkt bytes of pool blocks a held packet keeps")
	busy := "unknown"
	if m.Busy >= 0 {
		busy = fmt.Sprintf("%d%%", m.Busy)
	}
	fmt.Fprintf(w, "machine: %d x %s, %s, %s, load %s, CPUs busy before the start %s; %s\n", m.CPUs, m.CPU, m.Kernel, m.GoVersion, m.Load,
		busy, rep.Start.Format("2006-01-02 15:04 MST"))
	header := []string{"EXPERIMENT", "VARIANT", "METRIC", "MEDIAN", "RATIO", "VS", "RUNS", "MIN-MAX", "TARGET"}
	type line struct {
		title string
		cells []string
	}
	var lines []line
	last := ""
	for _, r := range rep.Rows {
		if r.Experiment != last {
			last = r.Experiment
			lines = append(lines, line{title: experimentTitle(rep, r.Experiment)})
		}
		if r.Error != "" {
			lines = append(lines, line{cells: []string{r.Experiment, r.Variant, r.Metric, "error: " + oneLine(r.Error)}})
			continue
		}
		vs := r.Reference
		if vs == "" {
			vs = "(ref)"
		}
		target := ""
		if r.Target != "" {
			switch {
			case r.Met == nil:
				target = r.Target + " unknown"
			case *r.Met:
				target = r.Target + " ok"
			default:
				target = r.Target + " MISSED"
			}
		}
		lines = append(lines, line{cells: []string{r.Experiment, r.Variant, r.Metric,
			FormatValue(r.Value, r.Unit), RatioString(r), vs, fmt.Sprint(r.Runs), spread(r), target}})
	}
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = len(h)
	}
	for _, l := range lines {
		for i, c := range l.cells {
			if i < len(l.cells)-1 || len(l.cells) == len(header) {
				width[i] = max(width[i], len(c))
			}
		}
	}
	put := func(cells []string) {
		var sb strings.Builder
		for i, c := range cells {
			if i == len(cells)-1 {
				sb.WriteString(c)
				break
			}
			sb.WriteString(c)
			sb.WriteString(strings.Repeat(" ", width[i]-len(c)+2))
		}
		fmt.Fprintln(w, strings.TrimRight(sb.String(), " "))
	}
	put(header)
	for _, l := range lines {
		if l.title != "" {
			fmt.Fprintf(w, "\n# %s\n", l.title)
			continue
		}
		put(l.cells)
	}
	fmt.Fprintf(w, "\n%d rows in %.0f s", len(rep.Rows), rep.Elapsed.Seconds())
	if f := rep.Failed(); len(f) > 0 {
		fmt.Fprintf(w, ", %d failed", len(f))
	}
	if m.Others >= 0 {
		fmt.Fprintf(w, "; other programs used %d%% of the CPUs meanwhile", m.Others)
		if m.Others > 5 {
			fmt.Fprint(w, " (figures disturbed: run again on a quieter machine)")
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// experimentTitle returns the title line of the experiment called name.
func experimentTitle(rep *Report, name string) string {
	for _, x := range rep.Experiments {
		if x.Name == name {
			if x.Seed != "" {
				return name + " (seed " + x.Seed + "): " + x.Title
			}
			return name + ": " + x.Title
		}
	}
	return name
}

// oneLine cuts s at its first newline, and a line longer than
// maxLineQuote bytes to that many (at a character's start) with "..."
// after: an error that quotes a program's output stays one short line.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) <= maxLineQuote {
		return s
	}
	n := maxLineQuote
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// maxLineQuote is the most of a line oneLine keeps, in bytes.
const maxLineQuote = 200

// JSONRow is a Row as an NDJSON line of skb bench --json: the Row's fields
// with "type":"row" first, as the other commands' lines carry a type.
type JSONRow struct {
	Type string `json:"type"` // "row"
	Row
}

// JSONResult is the last line of bench's NDJSON, after the rows, as the
// other commands end theirs with an object of "type":"result".
type JSONResult struct {
	Type string `json:"type"` // "result"
	// Rows is the number of rows written before it, Failed how many of
	// them carry an error.
	Rows   int `json:"rows"`
	Failed int `json:"failed"`
	// Seconds is how long the run took, in seconds (Report.Elapsed).
	Seconds float64 `json:"seconds"`
	// OthersPercent is Machine.Others, the share of all CPU time other
	// programs used during the run, in percent; absent when unknown.
	OthersPercent *int `json:"others_percent,omitempty"`
	// Stopped says the run was stopped before every experiment ran (its
	// context was cancelled); Signal names the signal that stopped it
	// ("SIGINT"), when one did.
	Stopped bool   `json:"stopped"`
	Signal  string `json:"signal,omitempty"`
}

// NewJSONResult returns the JSONResult of rep, for a run that was not
// stopped: the caller sets Stopped and Signal for one that was.
func NewJSONResult(rep *Report) JSONResult {
	res := JSONResult{Type: "result", Rows: len(rep.Rows), Failed: len(rep.Failed()), Seconds: rep.Elapsed.Seconds()}
	if rep.Machine.Others >= 0 {
		others := rep.Machine.Others
		res.OthersPercent = &others
	}
	return res
}

// WriteJSON writes rep as NDJSON, one JSON object per line: each row as a
// JSONRow ("type":"row" and the fields of Row: experiment, variant,
// metric, value, unit, ratio, ...), then the JSONResult of a run that was
// not stopped ("type":"result").
func WriteJSON(w io.Writer, rep *Report) error {
	if err := WriteJSONRows(w, rep.Rows); err != nil {
		return err
	}
	return WriteJSONResult(w, NewJSONResult(rep))
}

// WriteJSONRows writes rows as WriteJSON does, without the result, for a
// caller streaming them from Options.OnRows; WriteJSONResult ends the
// stream.
func WriteJSONRows(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(JSONRow{Type: "row", Row: r}); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSONResult writes res as one JSON line, with Type set to "result".
func WriteJSONResult(w io.Writer, res JSONResult) error {
	res.Type = "result"
	return json.NewEncoder(w).Encode(res)
}
