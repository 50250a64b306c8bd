package main

import (
	"testing"
	"time"
)

func TestDurationFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10", 10 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"1e-3", time.Millisecond, true},
		{"0", 0, true},
		{"-1", -time.Second, true}, // the command refuses it, with its own message
		{"250ms", 250 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"", 0, false},
		{"abc", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1e300", 0, false},
		{"-1e300", 0, false},
		{"Inf", 0, false},
		{"9223372036.854775807", 0, false}, // 2^63 ns as a float: would wrap
		{"9223372036", 9223372036 * time.Second, true},
		{"10 s", 0, false},
		{"1_0", 0, false},          // Go's digit separator: not a number a user writes
		{"0x10", 0, false},         // nor a hexadecimal one
		{"0.0000000001", 0, false}, // 0.1 ns: would pass as 0
		{"-0.0000000001", 0, false},
		{"0.000000001", time.Nanosecond, true},
	} {
		var d time.Duration
		err := (*durationValue)(&d).Set(tc.in)
		switch {
		case tc.ok && (err != nil || d != tc.want):
			t.Errorf("Set(%q) = %v, %v; want %v", tc.in, d, err, tc.want)
		case !tc.ok && err == nil:
			t.Errorf("Set(%q) = %v, want an error", tc.in, d)
		}
	}
	// Too long, written either way: the range error, not the syntax one.
	for _, in := range []string{"2562048h", "1e20", "-2562048h", "106751d"} {
		var d time.Duration
		want := errDurationRange
		if in == "106751d" {
			want = errDuration // no unit d
		}
		if err := (*durationValue)(&d).Set(in); err != want {
			t.Errorf("Set(%q): %v, want %v", in, err, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0", 1500 * time.Millisecond: "1.5s"} {
		if got := (*durationValue)(&d).String(); got != want {
			t.Errorf("String of %v = %q, want %q", d, got, want)
		}
	}
}

// FuzzDuration feeds the duration flag any text: it never panics, and a
// value it takes prints as a duration that it takes again as the same.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{"10", "0.5", "1e-3", "250ms", "1m30s", "1_0", "0x10", "Inf", "9223372036.854775807", "-0.0000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d durationValue
		if d.Set(s) != nil {
			return
		}
		var again durationValue
		if err := again.Set(time.Duration(d).String()); err != nil || again != d {
			t.Errorf("%q took as %v, which reads back as %v, %v", s, time.Duration(d), time.Duration(again), err)
		}
	})
}
