package traffic

import (
	"fmt"
	"strconv"
	"strings"
)

// IMIXEntry is one size of a traffic mix: Size payload bytes, sent Weight
// times in every sum-of-weights packets.
type IMIXEntry struct {
	Size   int
	Weight int
}

// DefaultIMIX is the "simple IMIX" of 7:4:1 small, medium and large
// packets (the classic Internet mix of 40-, 576- and 1500-byte IP packets,
// as test equipment sends it), in UDP payload bytes: 64, 576, and 1472,
// the largest payload that fits a 1500-byte MTU over IPv4.
var DefaultIMIX = []IMIXEntry{{64, 7}, {576, 4}, {1472, 1}}

// maxScheduleLen bounds the sum of the weights of a mix: the generator
// keeps one schedule entry per unit of weight.
const maxScheduleLen = 1 << 16

// ParseIMIX parses a mix written as SIZE:WEIGHT pairs separated by commas,
// such as "64:7,576:4,1472:1", with spaces allowed around each number; a
// SIZE without a weight has weight 1, and "imix" (or "default", in any
// case) is DefaultIMIX. It returns an error wrapping
// ErrConfig for anything else, a size below StampLen or a weight below 1.
func ParseIMIX(s string) ([]IMIXEntry, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "imix") || strings.EqualFold(s, "default") {
		return append([]IMIXEntry(nil), DefaultIMIX...), nil
	}
	if s == "" {
		return nil, fmt.Errorf("%w: empty imix", ErrConfig)
	}
	var mix []IMIXEntry
	total := 0
	for part := range strings.SplitSeq(s, ",") {
		size, weight, found := strings.Cut(part, ":")
		size, weight = strings.TrimSpace(size), strings.TrimSpace(weight)
		e := IMIXEntry{Weight: 1}
		var err error
		if e.Size, err = strconv.Atoi(size); err != nil {
			return nil, fmt.Errorf("%w: imix %q: size %q is not a number", ErrConfig, s, size)
		}
		if found {
			if e.Weight, err = strconv.Atoi(weight); err != nil {
				return nil, fmt.Errorf("%w: imix %q: weight %q is not a number", ErrConfig, s, weight)
			}
		}
		if err := checkIMIXEntry(e); err != nil {
			return nil, fmt.Errorf("%w: imix %q: %v", ErrConfig, s, err)
		}
		total += e.Weight
		if total > maxScheduleLen {
			return nil, fmt.Errorf("%w: imix %q: weights add up to more than %d", ErrConfig, s, maxScheduleLen)
		}
		mix = append(mix, e)
	}
	return mix, nil
}

// checkIMIXEntry says why e cannot be an entry of a mix (a size under the
// stamp, a weight out of range), without the mix's name, or returns nil.
func checkIMIXEntry(e IMIXEntry) error {
	switch {
	case e.Size < StampLen:
		return fmt.Errorf("size %d is below %d bytes (the stamp)", e.Size, StampLen)
	case e.Weight < 1 || e.Weight > maxScheduleLen:
		return fmt.Errorf("weight %d is not between 1 and %d", e.Weight, maxScheduleLen)
	}
	return nil
}

// schedule returns the sizes of one period of the mix, each Size appearing
// Weight times, spread evenly by smooth weighted round robin (each step
// every entry gains its weight and the richest is picked and pays the
// total), so that a short run already has the mix's proportions.
func schedule(mix []IMIXEntry) []int {
	total := 0
	for _, e := range mix {
		total += e.Weight
	}
	out := make([]int, 0, total)
	cur := make([]int, len(mix))
	for range total {
		best := 0
		for i, e := range mix {
			cur[i] += e.Weight
			if cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		out = append(out, mix[best].Size)
	}
	return out
}
