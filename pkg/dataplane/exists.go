package dataplane

import "errors"

// ExistsError is the kernel's refusal to make a pod link because one like
// it exists (EEXIST), with the cause worded: a link of that name in the
// pod, a node link of the node end's name, or, for a kind the kernel keeps
// one of per key (a VXLAN device per port and VNI), that key. Nothing of
// the interface was made.
type ExistsError struct {
	// Interface is the pod interface that was not made.
	Interface string
	// Cause words what exists.
	Cause string
	Err   error
}

func (e *ExistsError) Error() string { return e.Cause + ": " + e.Err.Error() }
func (e *ExistsError) Unwrap() error { return e.Err }

// NotMade lists the interfaces that err (an Apply's, however joined and
// wrapped) says were refused as existing.
func NotMade(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *ExistsError:
			out = append(out, e.Interface)
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				walk(c)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	return out
}
