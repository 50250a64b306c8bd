package main

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// durationValue is a duration flag that also takes a bare number as
// seconds, as iperf3's -t and ping's -w do: "-t 10" is ten seconds, "-t
// 1.5" a second and a half, and Go's forms ("500ms", "1m30s") work as
// ever. It prints as Go writes a duration, and as "0" when zero so that
// the help hides a zero default.
type durationValue time.Duration

// errDuration is what a flag says of a value that is neither form.
var errDuration = errors.New("want a number of seconds (10, 0.5) or a duration with its unit (500ms, 2s, 1m30s)")

// errDurationRange is what a flag says of a number of seconds that no
// duration holds.
var errDurationRange = errors.New("too long: want at most 292 years (9223372036 seconds)")

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err == nil {
		*d = durationValue(v)
		return nil
	}
	if durationSyntax.MatchString(s) {
		// Written as a duration, and yet refused: too long for one
		// ("2562048h").
		return errDurationRange
	}
	if !secondsSyntax.MatchString(s) {
		// Not decimal seconds: ParseFloat would take Go's other forms
		// too ("1_0", "0x10", "Inf").
		return errDuration
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return errDuration
	}
	// Checked in ns, where the conversion happens: a float64 of 2^63 ns
	// would wrap.
	if ns := f * float64(time.Second); ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return errDurationRange
	}
	v = time.Duration(f * float64(time.Second))
	if v == 0 && f != 0 {
		// A positive (or negative) value below 1ns would pass as 0.
		return errDurationTiny
	}
	*d = durationValue(v)
	return nil
}

// durationSyntax matches what time.ParseDuration takes, whatever its size.
var durationSyntax = regexp.MustCompile(`^[-+]?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// secondsSyntax matches a bare number of seconds: decimal, with an
// optional fraction and exponent ("10", "0.5", "1e-3").
var secondsSyntax = regexp.MustCompile(`^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$`)

// errDurationTiny is what a flag says of a number of seconds that rounds
// to no time at all.
var errDurationTiny = errors.New("below a nanosecond: want at least 0.000000001 seconds (1ns)")

func (d *durationValue) String() string {
	if *d == 0 {
		return "0"
	}
	return time.Duration(*d).String()
}

func (d *durationValue) Type() string { return "duration" }

// durationVarP defines a duration flag with a short form (none when short
// is empty) that also takes bare seconds.
func durationVarP(fs *pflag.FlagSet, p *time.Duration, name, short string, def time.Duration, usage string) {
	*p = def
	if short != "" {
		usage += "; 500ms, 2s, or bare seconds (-" + short + " 10)"
	}
	fs.VarP((*durationValue)(p), name, short, usage)
}
