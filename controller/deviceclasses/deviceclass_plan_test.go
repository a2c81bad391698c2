package deviceclasses

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

func TestDesiredDeviceClasses(t *testing.T) {
	p := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "telco"}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
		{Name: "data", DRA: &v1alpha1.DRAOffer{AttachmentsPerNode: 4}},
		{Name: "plain"},
	}}}
	got, err := DesiredDeviceClasses(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d classes, want one for the one DRA network", len(got))
	}
	c := got[0]
	if c.Name != "data.telco" || c.Labels[v1alpha1.DeviceClassProfileLabel] != "telco" {
		t.Errorf("class %s labels %v, want data.telco labelled with the profile", c.Name, c.Labels)
	}
	want := `device.driver == "podnet.io" && device.attributes["podnet.io"].profile == "telco" && device.attributes["podnet.io"].network == "data"`
	if len(c.Spec.Selectors) != 1 || c.Spec.Selectors[0].CEL == nil || c.Spec.Selectors[0].CEL.Expression != want {
		t.Errorf("selectors %+v, want %s", c.Spec.Selectors, want)
	}
	if none, err := DesiredDeviceClasses(nil); none != nil || err != nil {
		t.Errorf("a gone profile wants %v (%v), want none", none, err)
	}
}

func TestDesiredDeviceClassesNamesTooLong(t *testing.T) {
	p := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("p", 250)}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
		{Name: "data", DRA: &v1alpha1.DRAOffer{}}, {Name: "d", DRA: &v1alpha1.DRAOffer{}},
	}}}
	got, err := DesiredDeviceClasses(p)
	if err == nil || !strings.Contains(err.Error(), `device class for network "data"`) || !strings.Contains(err.Error(), "the limit is 253") {
		t.Errorf("error %v, want it to name network data and the limit", err)
	}
	if len(got) != 1 || got[0].Name != "d."+p.Name {
		t.Errorf("classes %v, want only that of network d", got)
	}
}
