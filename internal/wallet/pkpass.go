package wallet

import (
	"archive/zip"
	"bytes"
	"crypto/sha1" // Apple's manifest format names SHA-1
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sort"
	"sync"
	"time"
)

// Package is a .pkpass: a zip of pass.json, the images, manifest.json (the SHA-1 of each
// file, in hex) and signature (the manifest's detached PKCS7 signature), modified is the
// files' time in the zip.
func Package(p *Pass, s *Signer, modified time.Time) ([]byte, error) {
	passJSON, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	icon, logo := images()
	files := map[string][]byte{"pass.json": passJSON, "icon.png": icon, "logo.png": logo}
	manifest := make(map[string]string, len(files))
	for name, b := range files {
		sum := sha1.Sum(b)
		manifest[name] = hex.EncodeToString(sum[:])
	}
	manifestJSON, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return nil, err
	}
	signature, err := s.Sign(manifestJSON)
	if err != nil {
		return nil, err
	}
	files["manifest.json"], files["signature"] = manifestJSON, signature

	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: modified.UTC()})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(files[name]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("zip the pass: %w", err)
	}
	return buf.Bytes(), nil
}

// images are the pass's icon (29×29, shown on the lock screen and in notifications) and
// logo (160×50, the pass's top left): small PNGs drawn once.
var images = sync.OnceValues(func() (icon, logo []byte) {
	return drawPNG(29, 29), drawPNG(160, 50)
})

// drawPNG draws a w×h image in the pass's colours: a dark ground with a light band, the
// shape of a ticket's stub.
func drawPNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	ground, band := color.RGBA{24, 24, 36, 255}, color.RGBA{230, 180, 60, 255}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := ground
			if y >= h/3 && y < h-h/3 && x >= w/8 && x < w-w/8 {
				c = band
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // an in-memory RGBA image always encodes
	}
	return buf.Bytes()
}
