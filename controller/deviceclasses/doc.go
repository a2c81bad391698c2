// Package deviceclasses is podnet-controller's DeviceClasses reconciler:
// one DeviceClass per DRA network of each NetworkProfile, and only those
// (DesiredDeviceClasses, a pure plan; the admission policy
// podnet-controller-deviceclasses keeps the controller to podnet's own
// classes).
package deviceclasses
