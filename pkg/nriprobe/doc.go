// Package nriprobe finds out, by trying it, whether a node's runtime runs
// NRI's default validator: whether it refuses a container whose pod names,
// in NRI's required-plugins annotation, a plugin that did not process it.
// NRI alone does not ask a plugin that is not connected, so only the
// validator keeps a pod held by NRI from starting while the agent is away.
//
// The probe, through CRI only, runs a throwaway pod sandbox in the node's
// network namespace (no CNI call), annotated to require a plugin that
// does not exist (ProbePlugin), tries to create one container in it from
// the image the runtime pins for its sandboxes (never pulled), and removes
// by ID everything it made, whatever happened. The validator refusing the
// container means enforced; the container created means unenforced;
// anything else is unknown, never enforced. What the answer means is
// decided apart from the CRI calls (Meaning, PinnedImage).
//
// The probe must not be run where nothing holds it to a few seconds; it
// takes no lock of the runtime's and leaves nothing behind it can name.
package nriprobe
