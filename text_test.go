package seatflow_test

import (
	"strings"
	"testing"

	"seatflow"
)

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		name, s   string
		lineFeeds bool
		want      string // "" = accepted; else a part of the error
	}{
		{"Plain", "Metropolis", false, ""},
		{"Accents", "Amélie, Ümlaut, 東京物語", false, ""},
		{"Emoji", "🎬 Premiere", false, ""},
		{"InnerSpaces", "The  Third Man", false, ""},
		{"RightToLeftLetters", "שלום", false, ""},  // letters of a right-to-left script are text, not controls
		{"LeftToRightMark", "a\u200eb", false, ""}, // a mark, not an override: it reorders nothing around it
		{"LineFeedInParagraphs", "One.\nTwo.", true, ""},

		{"NUL", "a\x00b", false, "U+0000"},
		{"Tab", "a\tb", false, "U+0009"},
		{"LineFeedInALine", "a\nb", false, "U+000A"},
		{"CarriageReturnInParagraphs", "a\r\nb", true, "U+000D"},
		{"Escape", "a\x1b[31mb", false, "U+001B"},
		{"DEL", "a\x7fb", false, "U+007F"},
		{"C1", "a\u0085b", false, "U+0085"},
		{"C1Last", "a\u009fb", false, "U+009F"},
		{"LeftToRightEmbedding", "a\u202ab", false, "U+202A"},
		{"RightToLeftOverride", "a\u202eb", false, "U+202E"},
		{"LeftToRightIsolate", "a\u2066b", false, "U+2066"},
		{"PopDirectionalIsolate", "a\u2069b", false, "U+2069"},
		{"InvalidUTF8", "a\xffb", false, "not valid UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := seatflow.CheckText(c.s, c.lineFeeds)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("CheckText(%q): %v, want accepted", c.s, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("CheckText(%q): %v, want an error containing %q", c.s, err, c.want)
			}
		})
	}
}

func TestCheckKey(t *testing.T) {
	for _, c := range []struct{ s, want string }{
		{"pad", ""}, {"p a d", ""}, {"PAD", ""}, {"", ""},
		{"pad ", "white space"}, {" pad", "white space"}, {"pad\t", "white space"},
		{"pad\u00a0", "white space"}, {"pad\u3000", "white space"},
		{"p\x00ad", "U+0000"}, {"pad\u202e", "U+202E"},
	} {
		err := seatflow.CheckKey(c.s)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckKey(%q) = %v, want %q", c.s, err, c.want)
		}
	}
}
