package soak

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot draws one panel per metric, a curve per instance and each window's fitted line
// (dashed), into a PNG at path.
func Plot(path string, verdicts []Verdict) error {
	var panels [][]*plot.Plot
	for _, m := range Metrics {
		p := plot.New()
		p.Title.Text = m.Title
		p.X.Label.Text = "minutes"
		p.Y.Label.Text = m.Unit
		p.Legend.Top, p.Legend.Left = false, false // bottom right: the curves rise from the left and sit high
		n := 0
		for _, v := range verdicts {
			s := v.Series
			if s.Metric.Name != m.Name {
				continue
			}
			pts := make(plotter.XYs, len(s.At))
			for i, at := range s.At {
				pts[i] = plotter.XY{X: at.Minutes(), Y: s.Values[i]}
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			line.Color = plotutil.Color(n)
			p.Add(line)
			if s.Instance > 0 {
				p.Legend.Add(fmt.Sprintf("instance %d", s.Instance), line)
			}
			if v.N >= 3 && len(s.At) > 0 {
				end := s.At[len(s.At)-1].Minutes()
				from := v.From.Minutes()
				fit, err := plotter.NewLine(plotter.XYs{{X: from, Y: v.Intercept + v.Slope*from}, {X: end, Y: v.Intercept + v.Slope*end}})
				if err != nil {
					return err
				}
				fit.Color = color.Gray{Y: 80}
				fit.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				p.Add(fit)
			}
			n++
		}
		panels = append(panels, []*plot.Plot{p})
	}
	const width, panelHeight = 18 * vg.Centimeter, 6 * vg.Centimeter
	img := vgimg.New(width, panelHeight*vg.Length(len(panels)))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter, PadY: 3 * vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: 2 * vg.Millimeter}
	canvases := plot.Align(panels, tiles, dc)
	for i := range panels {
		panels[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		return err
	}
	return f.Close()
}
