package v1alpha1

// VRF routing tables that a VRF of a pod may never use: 0 (unspecified)
// and the kernel's own tables 252 (compat), 253 (default), 254 (main) and
// 255 (local). A VRF bound to the main table would put the tenant's routes
// beside the pod's own.
const (
	MinVRFTable        = 1
	MaxVRFTable        = 4294967295
	FirstReservedTable = 252
	LastReservedTable  = 255
)

// VRFPolicy lets a network's interfaces be put into a VRF (a Linux
// l3mdev device of kind vrf) inside the pod's own network namespace: the
// tenant names the VRF and its routing table, podnet creates the VRF
// device in the pod, enslaves the interface to it, and the interface's
// connected and requested routes live in the VRF's table instead of the
// pod's main table. Absent: a request that names a VRF is refused.
// +kubebuilder:validation:XValidation:rule="self.tables.all(r, r.split('-').all(x, int(x) >= 1 && int(x) <= 4294967295) && (r.split('-').size() == 1 || int(r.split('-')[0]) <= int(r.split('-')[1])))",message="vrf.tables must be table ids or ascending ranges within 1-4294967295, e.g. 1001 or 1000-1999"
// +kubebuilder:validation:XValidation:rule="self.tables.all(r, int(r.split('-')[r.split('-').size()-1]) < 252 || int(r.split('-')[0]) > 255)",message="vrf.tables must not include 252-255: those are the kernel's compat, default, main and local tables"
type VRFPolicy struct {
	// Tables are the routing table ids a tenant may give a VRF of this
	// network's interfaces, as single ids ("1001") or inclusive ranges
	// ("1000-1999"), within 1-4294967295 and outside 252-255. A table id
	// is local to the pod's network namespace: two pods using one id never
	// share routes.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[0-9]{1,10}(-[0-9]{1,10})?$`
	// +kubebuilder:validation:items:MaxLength=21
	Tables []string `json:"tables"`
}

// ApprovedVRF is the VRF an approved interface is put into, inside the
// pod's network namespace.
type ApprovedVRF struct {
	// Name of the VRF device in the pod (the CNI vrf plugin's vrfname).
	Name string `json:"name"`
	// Table is the VRF's routing table id.
	Table uint32 `json:"table"`
}
