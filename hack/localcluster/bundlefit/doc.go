// Package bundlefit fits a runc bundle to what the machines the local
// cluster runs on allow, before runc creates the container (see the
// command of the same name): an oom_score_adj no lower than the caller's
// own, as containerd's restrict_oom_score_adj does, and no hugetlb limits
// where no hugetlb cgroup hierarchy is mounted, as containerd leaves them
// out there. CRI-O does neither. The decision (Fit) is apart from the
// file and the exec, so it can be tested.
package bundlefit
