package traffic

import (
	"math"
	"math/bits"
	"time"
)

// histSubBits is log2 of the sub-buckets per power of two: 64 of them, so a
// recorded value is known to within 1/64 (1.6%), as an HDR histogram with
// two significant digits.
const histSubBits = 6

const (
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits) * histSub
)

// Histogram counts durations in log-linear buckets, as an HDR histogram
// does: exact below 128 ns, then 64 buckets per power of two, so every
// quantile is within 1.6% of the true value over the whole range of
// time.Duration. The zero value is empty and ready; it is about 30 KiB and
// Record allocates nothing. It is not safe for concurrent use.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64
	min, max time.Duration
}

func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1
	return (shift+1)<<histSubBits + int(v>>uint(shift)) - histSub
}

// histValue returns the middle of bucket i.
func histValue(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	shift := uint(i>>histSubBits - 1)
	low := uint64(i&(histSub-1)+histSub) << shift
	return low + (uint64(1)<<shift)/2
}

// Record counts one duration; a negative one counts as 0.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[histIndex(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
}

// Count returns the number of durations recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the duration below or at which a fraction q (0 to 1) of
// the recorded ones lie: the middle of the bucket holding the
// ceil(q*Count)-th smallest, clamped to the exact minimum and maximum. It
// returns 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(1, min(rank, h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := time.Duration(histValue(i))
			return max(h.min, min(v, h.max))
		}
	}
	return h.max
}

// Summary returns the count, minimum, mean, p50, p99, p99.9 and maximum.
func (h *Histogram) Summary() Latency {
	l := Latency{Count: h.n, Min: h.min, Max: h.max}
	if h.n == 0 {
		return l
	}
	l.Mean = time.Duration(h.sum / float64(h.n))
	l.P50, l.P99, l.P999 = h.Quantile(0.5), h.Quantile(0.99), h.Quantile(0.999)
	return l
}

// Reset empties the histogram.
func (h *Histogram) Reset() { *h = Histogram{} }

// Latency summarizes a set of durations.
type Latency struct {
	Count                     uint64
	Min, Mean, P50, P99, P999 time.Duration
	Max                       time.Duration
}

// merge adds the counts of o to h.
func (h *Histogram) merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}
