// Package chart draws the report's charts as SVG with gonum.org/v1/plot:
// startup distributions, requests/s by concurrency per route, and memory.
package chart

import (
	"fmt"
	"path/filepath"

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
		startup(r, "Startup to /health (ms, log scale)", func(s results.Startup) []float64 { return s.HealthMs }), 16*vg.Centimeter, 10*vg.Centimeter); err != nil {
		return nil, err
	}
	if err := add(report.Figure{Title: "Startup to first thumbnail, every run (ms, log scale)", File: "startup-thumbnail.svg"},
		startup(r, "Startup to first thumbnail (ms, log scale)", func(s results.Startup) []float64 { return s.ThumbnailMs }), 16*vg.Centimeter, 10*vg.Centimeter); err != nil {
		return nil, err
	}
	if err := add(report.Figure{Title: "Memory: idle VmRSS and peak RSS under load (MB)", File: "memory.svg"}, memory(r), 16*vg.Centimeter, 10*vg.Centimeter); err != nil {
		return nil, err
	}
	for _, rt := range r.Routes {
		if err := add(report.Figure{Title: "Requests/s by concurrency: " + rt.Label, File: "rps-" + rt.ID + ".svg"}, rps(r, rt), 16*vg.Centimeter, 10*vg.Centimeter); err != nil {
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
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var names []string
	for _, s := range r.Startup {
		vals := plotter.Values{}
		for _, v := range pick(s) {
			if v > 0 {
				vals = append(vals, v)
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
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	return p
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
	p.Legend.Top = true
	p.NominalX(names...)
	return p
}

// rps draws requests/s against concurrency, one line per target.
func rps(r *results.Results, rt results.Route) *plot.Plot {
	p := plot.New()
	p.Title.Text = rt.Label
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
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}
