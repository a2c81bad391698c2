package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// fakeNodeMACs returns seen, and counts the reads.
type fakeNodeMACs struct {
	seen  []policy.NodeMAC
	err   error
	uids  []string
	reads int
}

func (f *fakeNodeMACs) Seen(_ context.Context, uid string) ([]policy.NodeMAC, error) {
	f.reads++
	f.uids = append(f.uids, uid)
	return f.seen, f.err
}

func TestCheckNodeMACsRefusesAMACTheNodeUses(t *testing.T) {
	node := &fakeNodeMACs{seen: []policy.NodeMAC{
		{MAC: "0a:00:00:00:00:01", Of: `bridge "pnbr-data"`},
		{MAC: "0a:00:00:00:00:02", Of: `an FDB entry on port "pn0123456789abc" of bridge "pnbr-data"`},
	}}
	r := &Reconciler{NodeMACs: node}
	ctx := context.Background()
	approval := func(macs ...string) *v1alpha1.Approval {
		a := &v1alpha1.Approval{}
		for i, m := range macs {
			a.Interfaces = append(a.Interfaces, v1alpha1.ApprovedInterface{Interface: "net" + string(rune('1'+i)), Network: "data", MAC: m})
		}
		return a
	}
	cases := []struct {
		name string
		a    *v1alpha1.Approval
		want []string // empty: accepted
	}{
		{"the bridge's MAC", approval("0A:00:00:00:00:01"),
			[]string{`interface "net1" network "data"`, "interfaces[0].mac", "0A:00:00:00:00:01", `is the MAC of bridge "pnbr-data" on this node`}},
		{"a MAC the bridge learned on another port", approval("", "0a:00:00:00:00:02"),
			[]string{`interface "net2" network "data"`, "interfaces[1].mac", `an FDB entry on port "pn0123456789abc"`}},
		{"a MAC the node does not use", approval("0a:00:00:00:00:03"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := r.checkNodeMACs(ctx, "uid-1", c.a)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if node.uids[0] != "uid-1" {
		t.Errorf("read the node's MACs for pod %q, want uid-1 (its own ports left out)", node.uids[0])
	}

	reads := node.reads
	if err := r.checkNodeMACs(ctx, "uid-1", approval("")); err != nil || node.reads != reads {
		t.Errorf("no MAC to check: %v after %d reads, want none", err, node.reads-reads)
	}
	if err := (&Reconciler{}).checkNodeMACs(ctx, "uid-1", approval("0a:00:00:00:00:03")); err == nil || !strings.Contains(err.Error(), "cannot read the node's MACs") {
		t.Errorf("without a reader: %v, want a refusal", err)
	}
	broken := &Reconciler{NodeMACs: &fakeNodeMACs{err: errors.New("netlink gone")}}
	if err := broken.checkNodeMACs(ctx, "uid-1", approval("0a:00:00:00:00:03")); err == nil || !strings.Contains(err.Error(), "netlink gone") {
		t.Errorf("a failed read: %v, want it refused with the cause", err)
	}
}
