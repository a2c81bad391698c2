package policy

import (
	"reflect"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"podnet.io/podnet/api/v1alpha1"
)

// exactly is a request for one device of a class.
func exactly(name, class string) resourcev1.DeviceRequest {
	return resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}
}

// podnetConfig is a podnet.io opaque config of the named requests.
func podnetConfig(params string, requests ...string) resourcev1.DeviceClaimConfiguration {
	return resourcev1.DeviceClaimConfiguration{Requests: requests, DeviceConfiguration: resourcev1.DeviceConfiguration{
		Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: v1alpha1.DRADriver, Parameters: runtime.RawExtension{Raw: []byte(params)}}}}
}

func claimOf(reqs []resourcev1.DeviceRequest, cfgs ...resourcev1.DeviceClaimConfiguration) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", GenerateName: "web-"},
		Spec:       resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs, Config: cfgs}},
	}
}

func decideClaim(c *resourcev1.ResourceClaim) (*v1alpha1.Approval, []string) {
	a, errs := DecideClaim(ClaimInput{Namespace: telcoNamespace(), Claim: c, Prepared: NewProfileSet(baseProfiles())})
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return a, msgs
}

// TestDecideClaimJudgesAsTheAnnotation: a claim gets the approval a pod
// asking for the same in its annotation gets, without service account or
// request hash (BindClaim binds it), and other drivers' requests and
// configs are not read.
func TestDecideClaimJudgesAsTheAnnotation(t *testing.T) {
	gpu := exactly("gpu", "gpu.example.com")
	other := resourcev1.DeviceClaimConfiguration{Requests: []string{"gpu"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
		Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"anything":1}`)}}}}
	claim := claimOf([]resourcev1.DeviceRequest{gpu, exactly("dp", "data.telco-data"), exactly("up", "uplink.telco-uplink")},
		other, podnetConfig(`{"interface":"dp0","mtu":9000,"ips":["192.168.100.7/24"],"routes":[{"dst":"10.50.0.0/16"}]}`, "dp"))
	got, errs := decideClaim(claim)
	if len(errs) > 0 {
		t.Fatalf("claim refused: %q", errs)
	}
	pod := podWith(`[{"name":"data","interface":"dp0","mtu":9000,"ips":["192.168.100.7/24"],"routes":[{"dst":"10.50.0.0/16"}]},{"name":"uplink"}]`, "")
	want, perrs := Decide(Input{Namespace: telcoNamespace(), Pod: pod, Profiles: baseProfiles()})
	if len(perrs) > 0 {
		t.Fatalf("pod refused: %v", perrs)
	}
	want.ServiceAccount, want.RequestHash = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("claim's approval:\n%+v\nthe pod's:\n%+v", got, want)
	}

	none, errs := decideClaim(claimOf([]resourcev1.DeviceRequest{gpu}, other))
	if none != nil || len(errs) > 0 {
		t.Errorf("claim of another driver only: %+v, %q; want nothing asked", none, errs)
	}
}

// TestDecideClaimRefuses: every refusal names the field of the claim and
// the limit, as a pod's annotation's would.
func TestDecideClaimRefuses(t *testing.T) {
	data := exactly("dp", "data.telco-data")
	many := exactly("dp", "data.telco-data")
	many.Exactly.Count = 2
	all := exactly("dp", "data.telco-data")
	all.Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	admin := exactly("dp", "data.telco-data")
	admin.Exactly.AdminAccess = ptr.To(true)
	choice := resourcev1.DeviceRequest{Name: "dp", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: "gpu.example.com"}, {Name: "b", DeviceClassName: "l2.telco-data"}}}
	gpu := exactly("gpu", "gpu.example.com")
	tests := []struct {
		name  string
		claim *resourcev1.ResourceClaim
		parts []string
	}{
		{"mtu over the limit", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"mtu":9200}`, "dp")),
			[]string{"spec.devices.config[0].opaque.parameters.mtu", "9200", "1280-9000"}},
		// A claim asks for settings as the annotation does, judged by the
		// same resolution: data offers none.
		{"setting not offered", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"settings":{"arp_ignore":1}}`, "dp")),
			[]string{"spec.devices.config[0].opaque.parameters.settings[arp_ignore]", "does not let tenants choose arp_ignore"}},
		{"offload not offered", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"offloads":{"rx-gro":false}}`, "dp")),
			[]string{"spec.devices.config[0].opaque.parameters.offloads[rx-gro]", "offloads lists none"}},
		{"static ip outside the pool", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"ips":["10.9.9.9/24"]}`, "dp")),
			[]string{"spec.devices.config[0].opaque.parameters.ips[0]", "10.9.9.9/24", "192.168.100.0/24"}},
		{"unknown field", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"mtuu":1500}`, "dp")),
			[]string{"spec.devices.config[0].opaque.parameters.mtuu", "unknown field"}},
		{"name in the parameters", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"name":"l2"}`, "dp")),
			[]string{"spec.devices.config[0].opaque.parameters.name", "the device class names the network"}},
		{"namespace in the parameters", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"namespace":"t2"}`, "dp")),
			[]string{"spec.devices.config[0].opaque.parameters.namespace", "own namespace"}},
		{"parameters not an object", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`[1]`, "dp")),
			[]string{"spec.devices.config[0].opaque.parameters", "not a JSON object"}},
		{"config of every request", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"mtu":1500}`)),
			[]string{"spec.devices.config[0].requests", "must name the one podnet request"}},
		{"config of two requests", claimOf([]resourcev1.DeviceRequest{data, exactly("l2", "l2.telco-data")}, podnetConfig(`{"mtu":1500}`, "dp", "l2")),
			[]string{"spec.devices.config[0].requests", "names 2: write one config per request"}},
		{"config of another driver's request", claimOf([]resourcev1.DeviceRequest{data, gpu}, podnetConfig(`{"mtu":1500}`, "gpu")),
			[]string{"spec.devices.config[0].requests[0]", `"gpu.example.com"`, "not a podnet network's device class"}},
		{"config of no request", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"mtu":1500}`, "nope")),
			[]string{"spec.devices.config[0].requests[0]", "nope"}},
		{"two configs of one request", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"mtu":1500}`, "dp"), podnetConfig(`{"mtu":1600}`, "dp")),
			[]string{"spec.devices.config[1].requests[0]", "Duplicate"}},
		{"count 2", claimOf([]resourcev1.DeviceRequest{many}),
			[]string{"spec.devices.requests[0].exactly.count", "at most 1"}},
		{"allocation mode All", claimOf([]resourcev1.DeviceRequest{all}),
			[]string{"spec.devices.requests[0].exactly.allocationMode", "ExactCount"}},
		{"admin access", claimOf([]resourcev1.DeviceRequest{admin}),
			[]string{"spec.devices.requests[0].exactly.adminAccess", "not offered"}},
		{"podnet class among firstAvailable", claimOf([]resourcev1.DeviceRequest{choice}),
			[]string{"spec.devices.requests[0].firstAvailable[1].deviceClassName", "l2.telco-data", "exactly"}},
		{"network the profile does not offer", claimOf([]resourcev1.DeviceRequest{exactly("x", "secret.telco-data")}),
			[]string{"spec.devices.requests[0].exactly.deviceClassName", "secret", "no profile offers"}},
		{"profile that does not select the namespace", claimOf([]resourcev1.DeviceRequest{exactly("x", "secret.other")}),
			[]string{"spec.devices.requests[0].exactly.deviceClassName", "secret"}},
		{"class of another profile than the one offering", claimOf([]resourcev1.DeviceRequest{exactly("x", "data.telco-uplink")}),
			[]string{"spec.devices.requests[0].exactly.deviceClassName", `"data.telco-uplink"`, `profile "telco-uplink", which does not offer it`}},
		{"duplicate interface across requests", claimOf([]resourcev1.DeviceRequest{data, exactly("l2", "l2.telco-data")}, podnetConfig(`{"interface":"x0"}`, "dp"), podnetConfig(`{"interface":"x0"}`, "l2")),
			[]string{"spec.devices.config[1].opaque.parameters.interface", "x0", "already used"}},
		{"over maxInterfaces", claimOf([]resourcev1.DeviceRequest{data, exactly("b", "l2.telco-data"), exactly("c", "l2.telco-data")}),
			[]string{"spec.devices.requests[2]", "above maxInterfaces 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, errs := decideClaim(tt.claim)
			if a != nil || len(errs) == 0 {
				t.Fatalf("approved: %+v", a)
			}
			requireMsg(t, errs, tt.parts...)
		})
	}
}

// requireMsg is requireErr for messages.
func requireMsg(t *testing.T, msgs []string, parts ...string) {
	t.Helper()
	for _, m := range msgs {
		ok := true
		for _, p := range parts {
			if !strings.Contains(m, p) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
	}
	t.Fatalf("no error contains all of %q; errors:\n%q", parts, msgs)
}

// TestIsPodnetClass: a class is podnet's when its profile part names a
// profile of the set.
func TestIsPodnetClass(t *testing.T) {
	set := NewProfileSet(baseProfiles())
	for class, want := range map[string]bool{
		"data.telco-data": true, "anything.other": true, "gpu.example.com": false, "telco-data": false, ".telco-data": false, "data.": false,
	} {
		if got := set.IsPodnetClass(class); got != want {
			t.Errorf("IsPodnetClass(%q) = %v, want %v", class, got, want)
		}
	}
}

// FuzzDecideClaim: any opaque parameters and class give an approval or
// errors naming a field of the claim, never a panic.
func FuzzDecideClaim(f *testing.F) {
	f.Add("data.telco-data", `{"interface":"dp0","mtu":9000}`)
	f.Add("data.telco-data", `{"ips":["10.9.9.9/24"],"routes":[{"dst":"10.50.0.0/16"}]}`)
	f.Add("l2.telco-data", `{"name":"x"}`)
	f.Add("secret.other", `null`)
	f.Add("gpu.example.com", `{}`)
	f.Fuzz(func(t *testing.T, class, params string) {
		a, errs := decideClaim(claimOf([]resourcev1.DeviceRequest{exactly("dp", class)}, podnetConfig(params, "dp")))
		if a != nil && len(errs) > 0 {
			t.Fatalf("approval and errors: %+v, %q", a, errs)
		}
		for _, e := range errs {
			if !strings.HasPrefix(e, "spec.devices") {
				t.Fatalf("error outside the claim: %q", e)
			}
		}
	})
}
