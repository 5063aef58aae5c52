// Package chart draws the report's charts as SVG with gonum.org/v1/plot:
// startup distributions, requests/s by concurrency per route, and memory.
package chart

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/thumbd/thumbd/bench/internal/report"
	"github.com/thumbd/thumbd/bench/internal/results"
)

// WriteAll draws every chart the results have data for into dir and
// returns them in the order the report shows them.
func WriteAll(dir string, r *results.Results) ([]report.Figure, error) {
	var figs []report.Figure
	add := func(f report.Figure, p *plot.Plot, w, h vg.Length) error {
		if p == nil {
			return nil
		}
		if err := p.Save(w, h, filepath.Join(dir, f.File)); err != nil {
			return fmt.Errorf("chart %s: %w", f.File, err)
		}
		figs = append(figs, f)
		return nil
	}
	if err := add(report.Figure{Title: "Startup to health, every run (ms, log scale)", File: "startup-health.svg"},
		startup(r, "Startup to /health (ms, log scale)", func(s results.Startup) []float64 { return s.HealthMs }), 20*vg.Centimeter, 11*vg.Centimeter); err != nil {
		return nil, err
	}
	if err := add(report.Figure{Title: "Startup to first thumbnail, every run (ms, log scale)", File: "startup-thumbnail.svg"},
		startup(r, "Startup to first thumbnail (ms, log scale)", func(s results.Startup) []float64 { return s.ThumbnailMs }), 20*vg.Centimeter, 11*vg.Centimeter); err != nil {
		return nil, err
	}
	if err := add(report.Figure{Title: "Memory: idle VmRSS and peak RSS under load (MB)", File: "memory.svg"}, memory(r), 20*vg.Centimeter, 11*vg.Centimeter); err != nil {
		return nil, err
	}
	for _, rt := range r.Routes {
		if err := add(report.Figure{Title: "Requests/s by concurrency: " + rt.Label, File: "rps-" + rt.ID + ".svg"}, rps(r, rt), 20*vg.Centimeter, 11*vg.Centimeter); err != nil {
			return nil, err
		}
	}
	return figs, nil
}

// startup draws one box per target with every run as a point over it.
func startup(r *results.Results, title string, pick func(results.Startup) []float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "ms"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = ticks125{}
	lo, hi := math.Inf(1), math.Inf(-1)
	var names []string
	for _, s := range r.Startup {
		vals := plotter.Values{}
		for _, v := range pick(s) {
			if v > 0 {
				vals = append(vals, v)
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		x := float64(len(names))
		names = append(names, s.Target)
		box, err := plotter.NewBoxPlot(vg.Points(24), x, vals)
		if err != nil {
			continue
		}
		box.FillColor = plotutil.Color(len(names) - 1)
		pts := make(plotter.XYs, len(vals))
		for i, v := range vals {
			pts[i] = plotter.XY{X: x + 0.25, Y: v}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			continue
		}
		sc.GlyphStyle.Radius = vg.Points(2)
		p.Add(box, sc)
	}
	if len(names) == 0 {
		return nil
	}
	p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Add(plotter.NewGrid())
	return p
}

// ticks125 labels a log axis at 1, 2 and 5 times each power of ten, so a
// range of less than a decade still gets readable ticks.
type ticks125 struct{}

func (ticks125) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= min && v <= max {
				ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ts
}

// memory draws idle VmRSS and the largest peak RSS seen under load, per target.
func memory(r *results.Results) *plot.Plot {
	var names []string
	idle, peak := plotter.Values{}, plotter.Values{}
	for _, m := range r.Idle {
		if m.Error != "" {
			continue
		}
		names = append(names, m.Target)
		idle = append(idle, float64(m.VmRSS)/1e6)
		var mx int64
		for _, s := range r.Load {
			if s.Target == m.Target && s.ServerPeakRSS > mx {
				mx = s.ServerPeakRSS
			}
		}
		peak = append(peak, float64(mx)/1e6)
	}
	if len(names) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "Memory (MB)"
	p.Y.Label.Text = "MB"
	w := vg.Points(18)
	b1, err1 := plotter.NewBarChart(idle, w)
	b2, err2 := plotter.NewBarChart(peak, w)
	if err1 != nil || err2 != nil {
		return nil
	}
	b1.Color, b1.Offset = plotutil.Color(0), -w/2
	b2.Color, b2.Offset = plotutil.Color(1), w/2
	p.Add(plotter.NewGrid(), b1, b2)
	p.Legend.Add("idle VmRSS", b1)
	p.Legend.Add("peak RSS under load", b2)
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.7, float64(len(names))-0.3
	p.Y.Min, p.Y.Max = 0, 1.3*math.Max(maxOf(idle), maxOf(peak))
	return p
}

// rps draws requests/s against concurrency, one line per target.
func rps(r *results.Results, rt results.Route) *plot.Plot {
	p := plot.New()
	title, _, _ := strings.Cut(rt.Label, " to 256x256")
	p.Title.Text = title
	p.Y.Label.Text = "requests/s (2xx)"
	p.X.Label.Text = "concurrent clients"
	conc := r.Options.Concurrency
	var targets []string
	seen := map[string]bool{}
	for _, s := range r.Load {
		if s.Route == rt.ID && s.Skipped == "" && !seen[s.Target] {
			seen[s.Target] = true
			targets = append(targets, s.Target)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	for i, t := range targets {
		var pts plotter.XYs
		for ci, c := range conc {
			for _, s := range r.Load {
				if s.Route == rt.ID && s.Target == t && s.Concurrency == c && s.Skipped == "" {
					pts = append(pts, plotter.XY{X: float64(ci), Y: s.RPS})
				}
			}
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			continue
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		sc.Color = plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(t, l, sc)
	}
	names := make([]string, len(conc))
	for i, c := range conc {
		names[i] = fmt.Sprint(c)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(conc))-0.5
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.6 // headroom for the legend
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

func maxOf(vs plotter.Values) float64 {
	m := 0.0
	for _, v := range vs {
		m = math.Max(m, v)
	}
	return m
}
