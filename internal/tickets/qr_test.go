package tickets

import (
	"image"
	"image/color"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	gozxingqr "github.com/makiuchi-d/gozxing/qrcode"
	"github.com/makiuchi-d/gozxing/qrcode/decoder"
)

// TestQRSVGDecodesToTheCode: the SVG drawn for a code, rendered module by module, is read
// back to the same code by an independent QR reader (gozxing, a port of ZXing).
func TestQRSVGDecodesToTheCode(t *testing.T) {
	t.Parallel()
	code := "eyJhbGciOiJFZERTQSIsImtpZCI6IkFCQ0RFRkdISUpLTE1OT1AifQ." +
		"eyJ0a3QiOiJWR2xqYTJWME9qRXlNdyIsInNobyI6IlUyaHZkM1JwYldVNk13Iiwic2VhdCI6IlUyVmhkRG8wTlEiLCJuYmYiOjE4OTM0NTYwMDAsImV4cCI6MTg5MzQ3MDQwMH0." +
		strings.Repeat("S", 86)
	svg, err := QRSVG(code)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(svg, "<script") || strings.Contains(svg, "href") {
		t.Fatalf("the SVG refers to or runs something: %.200s", svg)
	}
	if got := decodeSVG(t, svg); got != code {
		t.Fatalf("decoded %q, want %q", got, code)
	}
	// The reader also accepts a mirror image; a phone's scanner may not. Read the modules
	// themselves and check they are not mirrored.
	res, err := decoder.NewDecoder().Decode(moduleMatrix(t, svg), nil)
	if err != nil || res.GetText() != code {
		t.Fatalf("the module matrix decodes to %q (%v)", res.GetText(), err)
	}
	if meta, ok := res.GetOther().(*decoder.QRCodeDecoderMetaData); ok && meta.IsMirrored() {
		t.Fatal("the QR code is drawn mirrored")
	}
}

// moduleMatrix is the SVG's modules without the quiet zone.
func moduleMatrix(t *testing.T, svg string) *gozxing.BitMatrix {
	t.Helper()
	n, _ := strconv.Atoi(regexp.MustCompile(`viewBox="0 0 (\d+)`).FindStringSubmatch(svg)[1])
	size := n - 2*qrQuietZone
	m, _ := gozxing.NewSquareBitMatrix(size)
	for _, sq := range regexp.MustCompile(`M(\d+) (\d+)h1v1h-1z`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.Atoi(sq[1])
		y, _ := strconv.Atoi(sq[2])
		m.Set(x-qrQuietZone, y-qrQuietZone)
	}
	return m
}

// decodeSVG draws the SVG's squares (8 pixels a module) and reads the QR code in it.
func decodeSVG(t *testing.T, svg string) string {
	t.Helper()
	m := regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no viewBox in %.100s", svg)
	}
	n, _ := strconv.Atoi(m[1])
	const scale = 8
	img := image.NewGray(image.Rect(0, 0, n*scale, n*scale))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	for _, sq := range regexp.MustCompile(`M(\d+) (\d+)h1v1h-1z`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.Atoi(sq[1])
		y, _ := strconv.Atoi(sq[2])
		for dy := range scale {
			for dx := range scale {
				img.SetGray(x*scale+dx, y*scale+dy, color.Gray{})
			}
		}
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gozxingqr.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
	if err != nil {
		t.Fatalf("the QR code does not decode: %v", err)
	}
	return res.GetText()
}
