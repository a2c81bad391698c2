// Package oomclamp raises a runc bundle's oom_score_adj to the calling
// process's own before runc creates the container (see the command of the
// same name): the one decision, apart from the exec, so it can be tested.
package oomclamp
