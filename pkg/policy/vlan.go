package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// vlanRange is an inclusive range of VLAN IDs.
type vlanRange struct{ lo, hi int32 }

type vlanRanges []vlanRange

// parseVLANRanges parses "120" and "100-199" entries, each within 1-4094.
func parseVLANRanges(allowed []string) (vlanRanges, error) {
	out := make(vlanRanges, 0, len(allowed))
	for _, s := range allowed {
		loS, hiS, isRange := strings.Cut(s, "-")
		if !isRange {
			hiS = loS
		}
		lo, err1 := strconv.ParseInt(loS, 10, 32)
		hi, err2 := strconv.ParseInt(hiS, 10, 32)
		if err1 != nil || err2 != nil || lo < 1 || hi > 4094 || lo > hi {
			return nil, fmt.Errorf("has vlan range %q that is not within 1-4094 in ascending order", s)
		}
		out = append(out, vlanRange{int32(lo), int32(hi)})
	}
	return out, nil
}

func (rs vlanRanges) contains(v int32) bool {
	for _, r := range rs {
		if v >= r.lo && v <= r.hi {
			return true
		}
	}
	return false
}
