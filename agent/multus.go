package agent

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
)

// The values of the agent's --multus-network-status setting.
const (
	// MultusStatusAuto writes Multus' status key only where no Multus is
	// detected (see MultusDetected).
	MultusStatusAuto = "auto"
	// MultusStatusOn always writes it.
	MultusStatusOn = "on"
	// MultusStatusOff never writes it.
	MultusStatusOff = "off"
)

// nadGroupVersion and nadResource are the NetworkAttachmentDefinition API
// that every Multus installation serves.
const (
	nadGroupVersion = "k8s.cni.cncf.io/v1"
	nadResource     = "network-attachment-definitions"
)

// WantMultusStatus decides whether the agent writes the network-status
// under Multus' key too. With "auto" it does so where no Multus writes it:
// two writers of one annotation would overwrite each other.
func WantMultusStatus(mode string, multusDetected bool) (bool, error) {
	switch mode {
	case MultusStatusOn:
		return true, nil
	case MultusStatusOff:
		return false, nil
	case MultusStatusAuto:
		return !multusDetected, nil
	}
	return false, fmt.Errorf("--multus-network-status %q: must be %s, %s or %s", mode, MultusStatusAuto, MultusStatusOn, MultusStatusOff)
}

// MultusDetected tells whether the API server serves the
// NetworkAttachmentDefinition resource, which every Multus installation
// brings. It is one discovery request, made once at start: no cluster-wide
// list or watch, and discovery is open to every authenticated client, so
// the agent needs no extra permission. A cluster that has the CRD without
// Multus running reads as having Multus; --multus-network-status=on
// overrides that.
func MultusDetected(dc discovery.DiscoveryInterface) (bool, error) {
	return servesResource(dc, nadGroupVersion, nadResource)
}

// servesResource tells, in one discovery request, whether the API server
// serves the resource in that group version.
func servesResource(dc discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
