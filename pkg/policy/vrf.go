package policy

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// VRFRequest puts an element's interface into a VRF inside the pod, in the
// words of the CNI vrf plugin's configuration: {"vrfname":"red","table":1001}.
type VRFRequest struct {
	// Name of the VRF device in the pod.
	Name string `json:"vrfname"`
	// Table is the VRF's routing table id; the profile's vrf.tables must
	// allow it.
	Table int64 `json:"table"`
}

// tableRange is an inclusive range of routing table ids.
type tableRange struct{ lo, hi uint32 }

type tableRanges []tableRange

// parseTableRanges parses "1001" and "1000-1999" entries, within
// 1-4294967295 and clear of the kernel's own tables.
func parseTableRanges(tables []string) (tableRanges, error) {
	if len(tables) == 0 {
		return nil, fmt.Errorf("has vrf without tables")
	}
	out := make(tableRanges, 0, len(tables))
	for _, s := range tables {
		loS, hiS, isRange := strings.Cut(s, "-")
		if !isRange {
			hiS = loS
		}
		lo, err1 := strconv.ParseUint(loS, 10, 32)
		hi, err2 := strconv.ParseUint(hiS, 10, 32)
		if err1 != nil || err2 != nil || lo < v1alpha1.MinVRFTable || lo > hi {
			return nil, fmt.Errorf("has vrf table range %q that is not within %d-%d in ascending order", s, v1alpha1.MinVRFTable, uint64(v1alpha1.MaxVRFTable))
		}
		if lo <= v1alpha1.LastReservedTable && hi >= v1alpha1.FirstReservedTable {
			return nil, fmt.Errorf("has vrf table range %q that includes %s", s, reservedTables)
		}
		out = append(out, tableRange{uint32(lo), uint32(hi)})
	}
	return out, nil
}

// reservedTables words the tables no VRF may use.
var reservedTables = fmt.Sprintf("%d-%d (the kernel's compat, default, main and local tables)", v1alpha1.FirstReservedTable, v1alpha1.LastReservedTable)

func (rs tableRanges) contains(t uint32) bool {
	for _, r := range rs {
		if t >= r.lo && t <= r.hi {
			return true
		}
	}
	return false
}

// validateVRFRequest checks one element's vrf on its own: a device name
// the kernel takes and that is not the pod's own, a table id a VRF may
// have, and no default route (the pod's default route lives in the main
// table, which a VRF's interface does not use).
func validateVRFRequest(p *field.Path, r *NetworkRequest) field.ErrorList {
	v := r.VRF
	if v == nil {
		return nil
	}
	var errs field.ErrorList
	if v.Name == "" {
		errs = append(errs, field.Required(p.Child("vrfname"), fmt.Sprintf("network %q: name the VRF, e.g. {\"vrfname\":\"red\",\"table\":1001}", r.Name)))
	} else {
		errs = append(errs, validateInterfaceName(p.Child("vrfname"), r.Name, v.Name)...)
	}
	switch {
	case v.Table < v1alpha1.MinVRFTable || v.Table > v1alpha1.MaxVRFTable:
		errs = append(errs, field.Invalid(p.Child("table"), v.Table, fmt.Sprintf("network %q: a VRF's table id is within %d-%d", r.Name, v1alpha1.MinVRFTable, uint64(v1alpha1.MaxVRFTable))))
	case v.Table >= v1alpha1.FirstReservedTable && v.Table <= v1alpha1.LastReservedTable:
		errs = append(errs, field.Invalid(p.Child("table"), v.Table, fmt.Sprintf("network %q: tables %s are never a VRF's", r.Name, reservedTables)))
	}
	if r.DefaultRoute != nil {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("network %q: an interface in a VRF cannot carry the pod's default route (default-route): the pod's default route lives in the main table, the VRF's routes in table %d", r.Name, v.Table)))
	}
	return errs
}

// validateVRFs checks the VRFs of a pod's elements together: one name has
// one table, one table belongs to one name, and no VRF is named like an
// interface of the pod (both are links in the pod's netns).
func validateVRFs(reqs []NetworkRequest) field.ErrorList {
	var errs field.ErrorList
	byName := map[string]int{}
	byTable := map[int64]int{}
	ifaces := map[string]int{PrimaryInterfaceName: -1, "lo": -1}
	for i, r := range reqs {
		if !r.Primary {
			ifaces[r.Interface] = i
		}
	}
	for i, r := range reqs {
		if r.VRF == nil {
			continue
		}
		p := annotationPath.Index(i).Child("vrf")
		v := *r.VRF
		if j, ok := ifaces[v.Name]; ok && j >= 0 {
			errs = append(errs, field.Invalid(p.Child("vrfname"), v.Name, fmt.Sprintf("network %q: element %d (network %q) names its interface so; a VRF and an interface of one pod need different names", r.Name, j, reqs[j].Name)))
		}
		if j, ok := byName[v.Name]; ok && reqs[j].VRF.Table != v.Table {
			errs = append(errs, field.Invalid(p.Child("table"), v.Table, fmt.Sprintf("network %q: VRF %q has table %d in element %d (network %q); one VRF has one table", r.Name, v.Name, reqs[j].VRF.Table, j, reqs[j].Name)))
		} else if !ok {
			byName[v.Name] = i
		}
		if j, ok := byTable[v.Table]; ok && reqs[j].VRF.Name != v.Name {
			errs = append(errs, field.Invalid(p.Child("table"), v.Table, fmt.Sprintf("network %q: table %d already belongs to VRF %q in element %d (network %q); two VRFs of one pod need two tables", r.Name, v.Table, reqs[j].VRF.Name, j, reqs[j].Name)))
		} else if !ok {
			byTable[v.Table] = i
		}
	}
	return errs
}

// resolveVRF approves an element's VRF where the profile lets the network's
// interfaces into a VRF and allows the table. Re-judged under a running pod
// (narrow.go), its refusal detaches the interface: moving it out of the VRF
// instead would put its routes into the pod's main table beside eth0's,
// which the tenant asked to keep apart.
func (l limit) resolveVRF(p *field.Path, v *VRFRequest, n *v1alpha1.Network) (*v1alpha1.ApprovedVRF, field.ErrorList) {
	if v == nil {
		return nil, nil
	}
	if n.VRF == nil {
		return nil, field.ErrorList{field.Forbidden(p, l.msg("profile %q does not let this network's interfaces into a VRF (vrf is not set)", l.profile))}
	}
	ranges, err := parseTableRanges(n.VRF.Tables)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(p.Child("table"), v.Table, l.admin(err.Error()))}
	}
	if v.Table < v1alpha1.MinVRFTable || v.Table > v1alpha1.MaxVRFTable || !ranges.contains(uint32(v.Table)) {
		return nil, field.ErrorList{field.Invalid(p.Child("table"), v.Table, l.msg("VRF table not allowed by profile %q, which allows vrf.tables %s", l.profile, strings.Join(n.VRF.Tables, ", ")))}
	}
	return &v1alpha1.ApprovedVRF{Name: v.Name, Table: uint32(v.Table)}, nil
}
