package kubectlpodnet

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// Output formats of -o; "" is the human one.
const (
	outputJSON = "json"
	outputYAML = "yaml"
)

// validOutput checks the -o flag.
func validOutput(format string) error {
	switch format {
	case "", outputJSON, outputYAML:
		return nil
	}
	return fmt.Errorf("--output %q: must be json or yaml (or omitted for text)", format)
}

// printStructured writes v as JSON or YAML; it reports false for the text
// format so the caller writes its own.
func printStructured(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case outputJSON:
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return true, err
	case outputYAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(data)
		return true, err
	}
	return false, nil
}

// writeExplain prints an explanation as `kubectl describe` would.
func writeExplain(w io.Writer, e Explanation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Pod:\t%s\n", e.Pod)
	fmt.Fprintf(tw, "Node:\t%s\n", orNone(e.Node))
	fmt.Fprintf(tw, "Phase:\t%s\n", orNone(e.Phase))
	fmt.Fprintf(tw, "Requested:\t%s\n", orNone(strings.TrimSpace(e.Requested)))
	tw.Flush()
	writeApproval(w, e)
	writeClaims(w, e.Claims)
	writeAttached(w, e)
	writePolicyLines(w, e.Policy)
	if c := e.Condition; c != nil {
		fmt.Fprintf(w, "Condition:  %s=%s reason=%s", c.Type, c.Status, orNone(c.Reason))
		if c.Message != "" {
			fmt.Fprintf(w, " message=%q", c.Message)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "Condition:  <none> (the agent has not reported on this pod)")
	}
	fmt.Fprintln(w, "Events (podnet-agent, latest last):")
	if len(e.Events) == 0 {
		fmt.Fprintln(w, "  <none>")
	}
	for _, ev := range e.Events {
		times := ""
		if ev.Count > 1 {
			times = fmt.Sprintf(" (x%d)", ev.Count)
		}
		fmt.Fprintf(w, "  %s  %s%s  %s\n", ev.Type, ev.Reason, times, ev.Message)
	}
	if e.Ready {
		_, err := fmt.Fprintln(w, "Status:     networks ready")
		return err
	}
	_, err := fmt.Fprintf(w, "Reason:     %s\n", e.Reason)
	return err
}

func writeApproval(w io.Writer, e Explanation) {
	switch {
	case e.ApprovalError != "":
		fmt.Fprintf(w, "Approved:   invalid: %s\n", e.ApprovalError)
		return
	case e.Approved == nil:
		fmt.Fprintln(w, "Approved:   <none>")
		return
	}
	a := e.Approved
	var profiles []string
	for _, p := range a.Profiles {
		profiles = append(profiles, fmt.Sprintf("%s (generation %d)", p.Name, p.Generation))
	}
	fmt.Fprintf(w, "Approved:   profiles %s, service account %q\n", orNone(strings.Join(profiles, ", ")), a.ServiceAccount)
	if a.PrimaryMTU != 0 {
		fmt.Fprintf(w, "  primary interface mtu %d\n", a.PrimaryMTU)
	}
	keys := make([]string, 0, len(a.Extra))
	for k := range a.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s: %s\n", k, a.Extra[k])
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  INTERFACE\tNETWORK\tPROFILE\tKIND\tDETAILS")
	for _, i := range a.Interfaces {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", i.Interface, i.Network, i.Profile, i.Kind, interfaceDetails(i))
	}
	tw.Flush()
}

// writePolicyLines prints which policies isolate each network's
// interface, and where to ask about one peer and port.
func writePolicyLines(w io.Writer, lines []PolicyLine) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "Policy (kubectl podnet policy POD --network N --from|--to PEER --port P says what passes):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  INTERFACE\tNETWORK\tINGRESS\tEGRESS")
	for _, l := range lines {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", l.Interface, l.Network, policyText(l.Ingress), policyText(l.Egress))
	}
	tw.Flush()
}

func writeAttached(w io.Writer, e Explanation) {
	switch {
	case e.StatusError != "":
		fmt.Fprintf(w, "Attached:   unreadable: %s\n", e.StatusError)
		return
	case len(e.Attached) == 0:
		fmt.Fprintln(w, "Attached:   <none>")
		return
	}
	fmt.Fprintln(w, "Attached:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  INTERFACE\tNETWORK\tIPS\tMAC\tMTU")
	for _, s := range e.Attached {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\n", s.Interface, s.Name, orNone(strings.Join(s.IPs, ",")), orNone(s.MAC), s.MTU)
	}
	tw.Flush()
	writeTunnels(w, e.Attached)
}

// writeTunnels prints each attached tunnel's endpoint and, for WireGuard,
// the pod's public key, which the tenant registers with the peer.
func writeTunnels(w io.Writer, attached []v1alpha1.NetworkStatus) {
	for _, s := range attached {
		t := s.Tunnel
		if t == nil {
			continue
		}
		fmt.Fprintf(w, "Tunnel %s:  %s to %s", s.Interface, t.Kind, orNone(t.Endpoint))
		if t.VNI != 0 {
			fmt.Fprintf(w, " vni %d", t.VNI)
		}
		fmt.Fprintln(w)
		if t.Kind == v1alpha1.KindWireGuard {
			fmt.Fprintf(w, "  public key: %s (register it with the peer)\n", orNone(t.PublicKey))
		}
	}
}

// writeNetworks prints what a namespace may use, one network a row, and
// the primary interface's tuning last.
func writeNetworks(w io.Writer, o policy.Offers) error {
	if len(o.Networks) == 0 && len(o.Primary) == 0 {
		_, err := fmt.Fprintln(w, o.Summary)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NETWORK\tPROFILES\tLIMITS")
	for _, n := range o.Networks {
		var ps []string
		for _, p := range n.Profiles {
			ps = append(ps, fmt.Sprintf("%s (max %d interfaces)", p.Name, p.MaxInterfaces))
		}
		limits := n.Limits
		if n.Unusable != "" {
			limits = "unusable: " + n.Unusable
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, strings.Join(ps, ", "), limits)
	}
	for _, p := range o.Primary {
		fmt.Fprintf(tw, "%s (primary)\t%s\tmtu %s\n", policy.PrimaryInterfaceName, p.Profile, p.MTU)
	}
	return tw.Flush()
}

// writePools prints pool usage, fullest first.
func writePools(w io.Writer, rows []PoolUsage) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No address pools: no NetworkProfile network has ipam.pools.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tNETWORK\tPOOL\tSIZE\tIN USE\tFREE\tUSED\tTOP NAMESPACE")
	for _, u := range rows {
		if u.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\t%s\t-\n", u.Profile, u.Network, u.Pool, u.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", u.Profile, u.Network, u.Pool, count(u.Size, u.hostBits), u.InUse, count(u.Free, u.hostBits), percent(u), topNamespace(u))
	}
	return tw.Flush()
}

// count writes an address count of a pool with hostBits host bits; pools
// of 2^40 addresses and more (IPv6) as the power of two, since nobody
// reads twenty digits and PoolSize caps at 2^63.
func count(n uint64, hostBits int) string {
	if hostBits < 40 {
		return strconv.FormatUint(n, 10)
	}
	return fmt.Sprintf("~2^%d", hostBits)
}

// percent is the share in use, never rounded up to 100% while one is free.
func percent(u PoolUsage) string {
	p := 100 * u.fullness()
	if p >= 99.95 && u.Free > 0 {
		return ">99.9%"
	}
	if p > 0 && p < 0.05 {
		return "<0.1%"
	}
	return fmt.Sprintf("%.1f%%", p)
}

// writeCanI prints the decision: "yes" and the interfaces, or "no" and why.
func writeCanI(w io.Writer, r CanIResult) error {
	if !r.Allowed {
		_, err := fmt.Fprintf(w, "no\n%s\n", r.Message)
		return err
	}
	fmt.Fprintln(w, "yes")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INTERFACE\tNETWORK\tPROFILE\tKIND\tDETAILS")
	for _, i := range r.Interfaces {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", i.Interface, i.Network, i.Profile, i.Kind, interfaceDetails(i))
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// interfaceDetails summarises an approved interface in one cell.
func interfaceDetails(i v1alpha1.ApprovedInterface) string {
	var d []string
	if i.Bridge != "" {
		d = append(d, "bridge "+i.Bridge)
	}
	if i.Master != "" {
		d = append(d, "master "+i.Master)
	}
	if i.Mode != "" {
		d = append(d, "mode "+i.Mode)
	}
	if i.VLAN != 0 {
		d = append(d, fmt.Sprintf("vlan %d", i.VLAN))
	}
	if i.MTU != 0 {
		d = append(d, fmt.Sprintf("mtu %d", i.MTU))
	}
	if i.MAC != "" {
		d = append(d, "mac "+i.MAC)
	} else if i.MACRange != nil {
		d = append(d, "mac from "+i.MACRange.Start+"-"+i.MACRange.End)
	}
	if i.IPAM != nil {
		if len(i.IPAM.Static) > 0 {
			d = append(d, "ips "+strings.Join(i.IPAM.Static, " "))
		} else {
			d = append(d, "ips from "+strings.Join(i.IPAM.Pools, " "))
		}
	}
	if t := i.Tunnel; t != nil {
		d = append(d, "endpoint "+t.Endpoint)
		if t.PeerPublicKey != "" {
			d = append(d, "peer "+t.PeerPublicKey)
		}
		if t.VNI != 0 {
			d = append(d, fmt.Sprintf("vni %d", t.VNI))
		}
	}
	for _, r := range i.Routes {
		d = append(d, "route "+r.Dst+orVia(r.Gateway))
	}
	if i.SLAAC {
		d = append(d, "slaac")
	}
	for _, name := range slices.Sorted(maps.Keys(i.Settings)) {
		d = append(d, fmt.Sprintf("%s %d", name, i.Settings[name]))
	}
	for _, name := range slices.Sorted(maps.Keys(i.Offloads)) {
		state := "off"
		if i.Offloads[name] {
			state = "on"
		}
		d = append(d, name+" "+state)
	}
	if i.CheckDuplicates || i.CheckGateway {
		d = append(d, "address check")
	}
	return orNone(strings.Join(d, ", "))
}

func orVia(gw string) string {
	if gw == "" {
		return ""
	}
	return " via " + gw
}
