package bench

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WritePlots writes one PNG bar chart per experiment of rep into dir, named
// <experiment>.png: the median of its charted metric (Experiment.Plot, the
// first by default) per variant, with the runs' minimum and maximum as error
// bars and each bar's ratio in its label. It returns the files written.
func WritePlots(dir string, rep *Report) ([]string, error) {
	var files []string
	for _, x := range rep.Experiments {
		var rows []Row
		for _, r := range rep.Rows {
			if r.Experiment == x.Name && r.Metric == x.plotMetric().Name && r.Error == "" {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		path := filepath.Join(dir, x.Name+".png")
		if err := plotRows(path, x, rows); err != nil {
			return files, fmt.Errorf("bench: plot %s: %w", x.Name, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// plotMetric returns the metric WritePlots charts for x.
func (x Experiment) plotMetric() Metric {
	if x.Plot > 0 && x.Plot < len(x.Metrics) {
		return x.Metrics[x.Plot]
	}
	return x.Metrics[0]
}

// plotRows draws rows (one metric of one experiment) as a bar chart.
func plotRows(path string, x Experiment, rows []Row) error {
	p := plot.New()
	title := x.Name
	if x.Seed != "" {
		title += " (seed " + x.Seed + ")"
	}
	p.Title.Text = title
	m := x.plotMetric()
	scale, unit := 1.0, m.Unit
	if m.Unit == "pps" {
		top := 0.0
		for _, r := range rows {
			top = max(top, r.Value)
		}
		scale, unit = 1e3, "kpps"
		if top >= 2e6 {
			scale, unit = 1e6, "Mpps"
		}
	}
	p.Y.Label.Text = m.Name + " (" + unit + ", median)"
	vals := make(plotter.Values, len(rows))
	errs := make(plotter.YErrors, len(rows))
	labels := make([]string, len(rows))
	for i, r := range rows {
		vals[i] = r.Value / scale
		errs[i].Low = (r.Value - r.Min) / scale
		errs[i].High = (r.Max - r.Value) / scale
		labels[i] = wrapLabel(r.Variant) + "\n" + RatioString(r)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return err
	}
	bars.Color = color.RGBA{R: 0x33, G: 0x66, B: 0x99, A: 0xff}
	bars.LineStyle.Width = 0
	p.Add(plotter.NewGrid(), bars)
	eb := &errorBars{vals: vals, errs: errs}
	if ye, err := plotter.NewYErrorBars(eb); err == nil {
		p.Add(ye)
	}
	p.NominalX(labels...)
	p.Y.Min = 0
	w := vg.Length(max(3, len(rows))) * vg.Inch * 1.3
	return p.Save(w, 3.6*vg.Inch, path)
}

// errorBars places the error bars at the bars' positions.
type errorBars struct {
	vals plotter.Values
	errs plotter.YErrors
}

func (e *errorBars) Len() int                        { return len(e.vals) }
func (e *errorBars) XY(i int) (float64, float64)     { return float64(i), e.vals[i] }
func (e *errorBars) YError(i int) (float64, float64) { return e.errs[i].Low, e.errs[i].High }

// wrapLabel breaks a variant's name into lines of about 14 characters.
func wrapLabel(s string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > 14 {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}
