package tickets

import (
	"fmt"
	"strings"

	"github.com/yeqown/go-qrcode/v2"
)

// qrQuietZone is the light border around the symbol, in modules (ISO/IEC 18004 asks for 4).
const qrQuietZone = 4

// QRSVG draws code as a QR code in SVG. The symbol (version, error correction M, masks) is
// yeqown/go-qrcode's; the SVG is written here from its module matrix, because that
// library's own writers make raster images: one path of unit squares, no script, no
// external reference, so a page may show it as an <img> under a strict CSP.
func QRSVG(code string) (string, error) {
	q, err := qrcode.NewWith(code, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium),
		qrcode.WithEncodingMode(qrcode.EncModeByte))
	if err != nil {
		return "", fmt.Errorf("qr code: %w", err)
	}
	var m matrixWriter
	if err := q.Save(&m); err != nil {
		return "", fmt.Errorf("qr code: %w", err)
	}
	return m.svg(), nil
}

// matrixWriter keeps the module matrix the library hands its writers.
type matrixWriter struct{ dark [][]bool }

func (m *matrixWriter) Write(mat qrcode.Matrix) error { m.dark = mat.Bitmap(); return nil }
func (m *matrixWriter) Close() error                  { return nil }

// svg writes the matrix: the viewBox is in modules, each dark module a 1×1 square of the
// one path, so the image scales to any size without blur.
func (m *matrixWriter) svg() string {
	n := len(m.dark) + 2*qrQuietZone
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, n, n)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range m.dark {
		for x, dark := range row {
			if dark {
				fmt.Fprintf(&b, "M%d %dh1v1h-1z", x+qrQuietZone, y+qrQuietZone)
			}
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String()
}
