// Package profilestatus is podnet-controller's NetworkProfile status
// (StatusReconciler): conditions (Ready, with the reason and fields when
// the profile is invalid or clashes with another), observedGeneration and
// per network and pool the addresses in use and available, computed by
// the pure planStatus and written only when it changed, never on a timer;
// and the gauges of pool usage.
package profilestatus
