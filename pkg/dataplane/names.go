package dataplane

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"podnet.io/podnet/api/wait"
)

// Marks that podnet puts into the ifalias of what it creates, so a restarted
// agent finds its own objects and leaves everything else alone.
const (
	// HostLinkAlias starts the ifalias of every link podnet creates, on the
	// node and in pods, so a restarted agent can find and garbage-collect
	// its own objects and never touches anything else.
	HostLinkAlias = "podnet"
	aliasSep      = ":"
	// bridgeAlias marks a node bridge that podnet created (and may delete
	// when its last port goes).
	bridgeAlias = HostLinkAlias + aliasSep + "bridge"
	// hostNamePrefix starts every node-side veth name.
	hostNamePrefix = "pn"
	// hostNameHashLen hex digits after the prefix keep the name within the
	// kernel's 15 characters.
	hostNameHashLen = 13
	// uplinkAlias marks a node VLAN subinterface that podnet created as the
	// uplink of a VLAN network's bridge (deleted with that bridge).
	uplinkAlias = HostLinkAlias + aliasSep + "vlan"
	// vlanBridgePrefix and vlanUplinkPrefix start the names of a VLAN
	// network's bridge and uplink; 'v' is no hex digit, so no port name
	// starts so.
	vlanBridgePrefix = "pnvb"
	vlanUplinkPrefix = "pnvu"
	// vlanNameHashLen hex digits keep those names within 15 characters.
	vlanNameHashLen = 11
	// vxlanAlias marks the VXLAN device podnet created as the overlay port
	// of a spanning network's bridge (deleted with that bridge).
	vxlanAlias = HostLinkAlias + aliasSep + "vxlan"
	// vxlanPrefix starts the name of a bridge's VXLAN device.
	vxlanPrefix = "pnvx"
	// spanAliasSep follows bridgeAlias in the alias of a spanning bridge,
	// before the name of its spanning port (VXLAN device or uplink), so
	// that the port is known as the bridge's own and not as a user.
	spanAliasSep = " span="
)

// vxlanName is the VXLAN device of a spanning network's bridge on a node,
// named from the bridge so every pod of the network finds it.
func vxlanName(bridge string) string {
	return vxlanPrefix + vlanHash(bridge, 0)
}

// spanBridgeAlias is the alias of a podnet bridge: bridgeAlias, followed
// for a spanning network by the name of its spanning port.
func spanBridgeAlias(spanPort string) string {
	if spanPort == "" {
		return bridgeAlias
	}
	return bridgeAlias + spanAliasSep + spanPort
}

// parseBridgeAlias reports whether alias marks a podnet bridge, and names
// its spanning port ("" for a node-local network).
func parseBridgeAlias(alias string) (spanPort string, ok bool) {
	if alias == bridgeAlias {
		return "", true
	}
	spanPort, ok = strings.CutPrefix(alias, bridgeAlias+spanAliasSep)
	return spanPort, ok && spanPort != ""
}

// isBridgeAlias reports whether alias marks a podnet bridge.
func isBridgeAlias(alias string) bool {
	_, ok := parseBridgeAlias(alias)
	return ok
}

// vlanBridgeName is the node bridge shared by the pods of one node on one
// VLAN of one parent NIC, named from the two so every pod finds it.
func vlanBridgeName(parent string, vlan int) string {
	return vlanBridgePrefix + vlanHash(parent, vlan)
}

// vlanUplinkName is the node VLAN subinterface of parent that is the only
// non-pod port of vlanBridgeName(parent, vlan).
func vlanUplinkName(parent string, vlan int) string {
	return vlanUplinkPrefix + vlanHash(parent, vlan)
}

func vlanHash(parent string, vlan int) string {
	sum := sha256.Sum256([]byte(parent + "." + strconv.Itoa(vlan)))
	return hex.EncodeToString(sum[:])[:vlanNameHashLen]
}

// hostName is the deterministic name of the node end of a pod's veth, so the
// same pod interface always maps to the same node link.
func hostName(uid, ifname string) string {
	sum := sha256.Sum256([]byte(uid + "/" + ifname))
	return hostNamePrefix + hex.EncodeToString(sum[:])[:hostNameHashLen]
}

// portAlias marks a node link that belongs to one pod interface.
func portAlias(uid, ifname string) string {
	return HostLinkAlias + aliasSep + uid + aliasSep + ifname
}

// parsePortAlias returns the pod UID and interface of a node link marked by
// portAlias; ok is false for any other alias (including bridgeAlias).
func parsePortAlias(alias string) (uid, ifname string, ok bool) {
	rest, found := strings.CutPrefix(alias, HostLinkAlias+aliasSep)
	if !found {
		return "", "", false
	}
	uid, ifname, found = strings.Cut(rest, aliasSep)
	if !found || uid == "" || ifname == "" {
		return "", "", false
	}
	return uid, ifname, true
}

// podAlias marks a link inside the pod as podnet's, so that eth0, lo and
// anything else in the pod is never touched.
func podAlias(ifname string) string {
	return HostLinkAlias + aliasSep + ifname
}

// checkingAlias marks a pod link as podnet's while its addresses are
// checked on the wire (Interface.CheckDuplicates, CheckGateways): the link
// is up to probe, podnet-wait waits on while the alias says so, and a link
// left with it (a failed check, an agent stopped mid-check) is unfinished
// and made anew, so checked again.
func checkingAlias(ifname string) string {
	return podAlias(ifname) + wait.CheckingAliasSuffix
}

// isPodAlias reports whether a pod link's alias marks it as podnet's.
func isPodAlias(alias, ifname string) bool {
	return alias == podAlias(ifname)
}
