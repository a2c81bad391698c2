package dra

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"podnet.io/podnet/api/v1alpha1"
)

func allocatedClaim(uid string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c-" + uid, UID: types.UID(uid)}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "pod-" + uid, UID: "p"}}
	return c
}

func result(driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: "net", Driver: driver, Pool: pool, Device: device}
}

// Prepare accepts a claim of this node's podnet devices and remembers its
// pods; a claim that is not allocated, holds only other drivers' devices
// or a podnet device of another node fails alone, naming the claim;
// unprepare forgets.
func TestDriverPrepareAndUnprepare(t *testing.T) {
	rec := &Recorder{}
	d := &Driver{NodeName: "n1", Preparer: rec, Log: logr.Discard()}
	good := allocatedClaim("good", result(v1alpha1.DRADriver, "n1", "data-0"), result("gpu.example.com", "n1", "gpu-0"))
	unallocated := allocatedClaim("unalloc")
	unallocated.Status.Allocation = nil
	claims := []*resourceapi.ResourceClaim{
		good, nil, unallocated,
		allocatedClaim("foreign", result("gpu.example.com", "n1", "gpu-0")),
		allocatedClaim("othernode", result(v1alpha1.DRADriver, "n2", "data-0")),
	}
	res, err := d.PrepareResourceClaims(context.Background(), claims)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["good"]; r.Err != nil || len(r.Devices) != 1 || r.Devices[0].DeviceName != "data-0" || r.Devices[0].PoolName != "n1" {
		t.Errorf("good claim: %+v", r)
	}
	for uid, want := range map[types.UID]string{
		"unalloc":   "resource claim t/c-unalloc: not allocated",
		"foreign":   "resource claim t/c-foreign: allocated no podnet.io device",
		"othernode": `resource claim t/c-othernode: request "net" holds device "data-0" of pool "n2", not of this node "n1"`,
	} {
		if r := res[uid]; r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("claim %s: error %v, want %q", uid, r.Err, want)
		}
	}
	pc, ok := rec.Claim("good")
	if !ok || len(pc.Pods) != 1 || pc.Pods[0] != (types.NamespacedName{Namespace: "t", Name: "pod-good"}) {
		t.Errorf("recorded %+v, want the claim with its pod t/pod-good", pc)
	}
	if rec.Len() != 1 {
		t.Errorf("%d claims recorded, want only the good one", rec.Len())
	}
	un, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{
		{UID: "good", NamespacedName: types.NamespacedName{Namespace: "t", Name: "c-good"}},
		{UID: "never", NamespacedName: types.NamespacedName{Namespace: "t", Name: "c-never"}},
	})
	if err != nil || un["good"] != nil || un["never"] != nil || len(un) != 2 {
		t.Errorf("unprepare: %v %v", un, err)
	}
	if rec.Len() != 0 {
		t.Errorf("%d claims recorded after unprepare, want 0", rec.Len())
	}
}

// Recorder is a ClaimPreparer that only remembers each prepared claim and
// its pods, and forgets it when unprepared (the agent's is
// ClaimNetworks.Preparer).
type Recorder struct {
	mu     sync.Mutex
	claims map[types.UID]PreparedClaim
}

// Prepare implements ClaimPreparer.
func (r *Recorder) Prepare(_ context.Context, c PreparedClaim) error {
	if c.UID == "" {
		return errors.New("prepare: claim without uid")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.claims == nil {
		r.claims = map[types.UID]PreparedClaim{}
	}
	r.claims[c.UID] = c
	return nil
}

// Unprepare implements ClaimPreparer.
func (r *Recorder) Unprepare(_ context.Context, uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.claims, uid)
	return nil
}

// Claim is the recorded claim of uid.
func (r *Recorder) Claim(uid types.UID) (PreparedClaim, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.claims[uid]
	return c, ok
}

// Len is the number of claims prepared and not unprepared.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.claims)
}
