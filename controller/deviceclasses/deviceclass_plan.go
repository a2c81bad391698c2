package deviceclasses

import (
	"fmt"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// ReasonDeviceClassConflict is the reason of the Warning Event on a
// profile when a DeviceClass of one of its DRA networks' names exists
// without the v1alpha1.DeviceClassProfileLabel of that profile: the
// controller never changes or deletes such a class.
const ReasonDeviceClassConflict = "DeviceClassConflict"

// DesiredDeviceClasses are the DeviceClasses the controller keeps for
// profile p: one per network with a dra block, named
// v1alpha1.DeviceClassName, labelled with the profile, selecting podnet's
// devices of that profile and network. p nil (the profile is gone): none.
// A network whose class name is too long is left out and named in the
// error.
func DesiredDeviceClasses(p *v1alpha1.NetworkProfile) ([]resourceapi.DeviceClass, error) {
	if p == nil {
		return nil, nil
	}
	var out []resourceapi.DeviceClass
	var err error
	for _, n := range p.Spec.Networks {
		if n.DRA == nil {
			continue
		}
		name, nameErr := v1alpha1.DeviceClassName(p.Name, n.Name)
		if nameErr != nil {
			err = nameErr
			continue
		}
		out = append(out, resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.DeviceClassProfileLabel: p.Name}},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: deviceSelector(p.Name, n.Name)},
			}}},
		})
	}
	return out, err
}

// deviceSelector selects the devices a node publishes for one network of
// one profile (agent/dra): the driver, and the profile and network
// attributes in the driver's domain.
func deviceSelector(profile, network string) string {
	attrs := fmt.Sprintf("device.attributes[%s]", strconv.Quote(v1alpha1.DRADriver))
	return fmt.Sprintf("device.driver == %s && %s.%s == %s && %s.%s == %s",
		strconv.Quote(v1alpha1.DRADriver),
		attrs, v1alpha1.DeviceAttrProfile, strconv.Quote(profile),
		attrs, v1alpha1.DeviceAttrNetwork, strconv.Quote(network))
}

// ownsDeviceClass says whether the class is the controller's for profile:
// it carries the profile label with that profile's name.
func ownsDeviceClass(c *resourceapi.DeviceClass, profile string) bool {
	v, ok := c.Labels[v1alpha1.DeviceClassProfileLabel]
	return ok && v == profile
}
