package policy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// approvalOf grants one interface per network, each allowing raw sockets
// as given.
func approvalOf(raw ...bool) *v1alpha1.Approval {
	a := &v1alpha1.Approval{Namespace: "t1"}
	for i, r := range raw {
		name := []string{"data", "fast", "lan"}[i]
		a.Interfaces = append(a.Interfaces, v1alpha1.ApprovedInterface{Interface: "net" + string(rune('1'+i)), Network: name, Profile: "telco-data", RawSockets: r})
	}
	return a
}

func caps(add, drop []corev1.Capability) *corev1.SecurityContext {
	return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: add, Drop: drop}}
}

func list(cs ...corev1.Capability) []corev1.Capability { return cs }

// dropsRaw is the security context the webhook gives a container.
var dropsRaw = caps(nil, list("NET_RAW"))

func TestValidatePodPrivilege(t *testing.T) {
	cases := []struct {
		name string
		spec corev1.PodSpec
		a    *v1alpha1.Approval
		want []string // substrings of the errors, in one message; none: valid
	}{
		{"dropped NET_RAW", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: dropsRaw}}}, approvalOf(false), nil},
		{"dropped ALL in lower case", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: caps(nil, list("all"))}}}, approvalOf(false), nil},
		{"default NET_RAW where every network allows it", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, approvalOf(true, true), nil},
		{"added NET_RAW where every network allows it", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: caps(list("NET_RAW"), nil)}}}, approvalOf(true), nil},
		{"harmless capability", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: caps(list("NET_BIND_SERVICE"), list("NET_RAW"))}}}, approvalOf(false), nil},
		{"hostPath elsewhere", corev1.PodSpec{Volumes: []corev1.Volume{hostPath("data", "/var/lib/app"), hostPath("podnetish", "/run/podnet2")}}, approvalOf(true), nil},

		{"no security context, raw not allowed", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, approvalOf(true, false),
			[]string{"spec.containers[0].securityContext.capabilities.drop", `container "app" holds NET_RAW`, `network "fast" (interface net2) does not allow raw sockets`, `profile "telco-data"`}},
		{"CAP_NET_RAW drops nothing", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: caps(nil, list("CAP_NET_RAW"))}}}, approvalOf(false),
			[]string{"spec.containers[0].securityContext.capabilities.drop", "[CAP_NET_RAW]", `container "app" holds NET_RAW`}},
		{"no networks at all", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, approvalOf(),
			[]string{`container "app" holds NET_RAW`, "grants no network that allows raw sockets"}},
		{"NET_ADMIN", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: caps(list("NET_BIND_SERVICE", "net_admin"), list("ALL"))}}}, approvalOf(true),
			[]string{"spec.containers[0].securityContext.capabilities.add[1]", `"net_admin"`, `container "app" adds NET_ADMIN`}},
		{"CAP_SYS_ADMIN in an init container", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "setup", SecurityContext: caps(list("CAP_SYS_ADMIN"), list("NET_RAW"))}}}, approvalOf(false),
			[]string{"spec.initContainers[0].securityContext.capabilities.add[0]", `"CAP_SYS_ADMIN"`, `init container "setup" adds SYS_ADMIN`}},
		{"ALL", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: caps(list("ALL"), list("NET_RAW"))}}}, approvalOf(true),
			[]string{"capabilities.add[0]", `container "app" adds ALL`}},
		{"privileged", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: &corev1.SecurityContext{Privileged: ptrTo(true), Capabilities: &corev1.Capabilities{Drop: list("ALL")}}}}}, approvalOf(true),
			[]string{"spec.containers[0].securityContext.privileged", "true", `container "app" runs privileged`}},
		{"NET_RAW added back after dropping ALL", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: caps(list("NET_RAW"), list("ALL"))}}}, approvalOf(false),
			[]string{"capabilities.add[0]", `container "app" adds NET_RAW`, `network "data"`}},
		{"ephemeral container keeping NET_RAW", corev1.PodSpec{
			Containers:          []corev1.Container{{Name: "app", SecurityContext: dropsRaw}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg"}}},
		}, approvalOf(false), []string{"spec.ephemeralContainers[0].securityContext.capabilities.drop", `ephemeral container "dbg" holds NET_RAW`}},
		{"hostPath of the agent's folder", corev1.PodSpec{Volumes: []corev1.Volume{hostPath("sock", "/run/podnet")}}, approvalOf(true),
			[]string{"spec.volumes[0].hostPath.path", `"/run/podnet"`, `volume "sock" reaches /run/podnet`}},
		{"hostPath below it, through /var/run", corev1.PodSpec{Volumes: []corev1.Volume{hostPath("ok", "/tmp"), hostPath("sock", "/var/run/podnet/cni.sock")}}, approvalOf(true),
			[]string{"spec.volumes[1].hostPath.path", "/var/run/podnet/cni.sock"}},
		{"hostPath holding it", corev1.PodSpec{Volumes: []corev1.Volume{hostPath("run", "/run/")}}, approvalOf(true), []string{"spec.volumes[0].hostPath.path", `"/run/"`}},
		{"hostPath of the root", corev1.PodSpec{Volumes: []corev1.Volume{hostPath("root", "/")}}, approvalOf(true), []string{"spec.volumes[0].hostPath.path"}},
		{"hostPath with dots", corev1.PodSpec{Volumes: []corev1.Volume{hostPath("sneaky", "/var/lib/../../run/./podnet")}}, approvalOf(true), []string{"spec.volumes[0].hostPath.path"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := ValidatePodPrivilege(&c.spec, c.a)
			if len(c.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("accepted, want an error mentioning %q", c.want)
			}
			msg := errs.ToAggregate().Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not mention %q", msg, w)
				}
			}
		})
	}
}

func TestRawSocketsAllowed(t *testing.T) {
	for _, c := range []struct {
		a    *v1alpha1.Approval
		want bool
	}{{nil, false}, {approvalOf(), false}, {approvalOf(true), true}, {approvalOf(true, true), true}, {approvalOf(true, false), false}} {
		if got := RawSocketsAllowed(c.a); got != c.want {
			t.Errorf("%+v: %v, want %v", c.a, got, c.want)
		}
	}
}

func hostPath(name, p string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}}
}

func ptrTo[T any](v T) *T { return &v }

// runtimeDefaultCaps is containerd's default capability set.
var runtimeDefaultCaps = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

// runtimeAllCaps stands for every capability the runtime knows.
var runtimeAllCaps = append(slices.Clone(runtimeDefaultCaps), "NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE", "BPF")

// runtimeCaps is the set a container gets, computed as containerd's CRI
// plugin does (WithCapabilities): ALL in add gives every capability, ALL
// in drop clears the set, then each named add, then each named drop, every
// name upper-cased and prefixed with CAP_, so "CAP_X" names CAP_CAP_X,
// which no kernel knows.
func runtimeCaps(privileged bool, add, drop []corev1.Capability) map[string]bool {
	set := map[string]bool{}
	in := func(cs []corev1.Capability) bool {
		return slices.ContainsFunc(cs, func(c corev1.Capability) bool { return strings.EqualFold(string(c), "ALL") })
	}
	for _, c := range runtimeDefaultCaps {
		set["CAP_"+c] = true
	}
	if privileged || in(add) {
		for _, c := range runtimeAllCaps {
			set["CAP_"+c] = true
		}
	}
	if privileged {
		return set
	}
	if in(drop) {
		clear(set)
	}
	for _, c := range add {
		if !strings.EqualFold(string(c), "ALL") {
			set["CAP_"+strings.ToUpper(string(c))] = true
		}
	}
	for _, c := range drop {
		delete(set, "CAP_"+strings.ToUpper(string(c)))
	}
	return set
}

// FuzzPodPrivilege varies a container's capabilities: whenever
// ValidatePodPrivilege accepts the pod, the set the runtime would give the
// container holds neither NET_ADMIN nor SYS_ADMIN, and NET_RAW only where
// every network allows raw sockets; every error names the container.
func FuzzPodPrivilege(f *testing.F) {
	f.Add("NET_ADMIN", "NET_RAW", false, true)
	f.Add("SYS_ADMIN", "", false, true)
	f.Add("", "CAP_NET_RAW", false, false)
	f.Add("NET_RAW", "ALL", false, true)
	f.Add("net_bind_service,chown", "net_raw", false, false)
	f.Add("", "all", true, true)
	f.Add("cap_sys_admin", "NET_RAW", false, false)
	f.Fuzz(func(t *testing.T, add, drop string, privileged, raw bool) {
		split := func(s string) []corev1.Capability {
			var out []corev1.Capability
			for c := range strings.SplitSeq(s, ",") {
				if c != "" {
					out = append(out, corev1.Capability(c))
				}
			}
			return out
		}
		sc := caps(split(add), split(drop))
		sc.Privileged = &privileged
		spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: sc}}}
		errs := ValidatePodPrivilege(&spec, approvalOf(raw))
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.containers[0].securityContext") || !strings.Contains(e.Detail, `container "app"`) {
				t.Fatalf("error does not name the container's field: %v", e)
			}
		}
		if len(errs) > 0 {
			return
		}
		got := runtimeCaps(privileged, sc.Capabilities.Add, sc.Capabilities.Drop)
		if got["CAP_NET_ADMIN"] || got["CAP_SYS_ADMIN"] || (got["CAP_NET_RAW"] && !raw) {
			t.Fatalf("accepted add %q drop %q privileged %v (raw sockets allowed: %v), the runtime would grant %v", add, drop, privileged, raw, got)
		}
	})
}
