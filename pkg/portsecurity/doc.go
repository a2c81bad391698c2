// Package portsecurity keeps a pod's port on a node bridge from sending
// frames in another's name: from the port, the bridge forwards only frames
// whose source MAC is the pod interface's own, ARP whose sender MAC and IPv4
// address are its own (or 0.0.0.0, an ARP probe), IPv4 from its assigned
// addresses, IPv6 from its assigned addresses, its link-local addresses or
// :: (duplicate address detection), and neighbour solicitations and
// advertisements that claim only its own addresses and MAC. What only a
// network's routers send (IPv6 router advertisements, ICMP and ICMPv6
// redirects, DHCP and DHCPv6 server answers) is dropped unless the port is
// a router's (Port.Router). VLAN-tagged frames are dropped: the tag would
// hide the inner header from the checks, and a pod's port is an access
// port.
//
// It is split in two: a pure planner (plan.go: port name, MAC, addresses →
// the Plan of what the port may send, with a fingerprint) and an nftables
// executor (*_linux.go, through github.com/google/nftables, so no nft
// binary is needed) that writes a Plan into the node's netns and removes it.
//
// nftables layout, all in one table of the bridge family that podnet owns,
// TableName ("podnet-portsec"):
//
//	chain ports { type filter hook prerouting priority filter; policy accept;
//	  iifname != @secured accept
//	  iifname . ether saddr != @mac drop      # and the other drops
//	  iifname . ip saddr != @v4 drop
//	  iifname @norouter icmpv6 type nd-router-advert drop  # ...
//	}
//	set secured, set norouter               # port names
//	set mac, set v4, set v6                 # port name . MAC / address
//
// A port is only elements of these sets, so writing one costs the same on
// a node with 1,000 ports as with 2, and a Conn (the agent's) writes only
// the elements that differ, without reading the table. The prerouting hook
// runs before the bridge learns the source MAC, so a dropped frame teaches
// the bridge nothing. A drop in this table is final whatever other tables
// accept; a port not in the secured set is not filtered, which is why the
// caller writes a port's Plan before it sets the port up and removes it
// only after the port is gone. The table of the per-port layout before it
// ("podnet-ports") is emptied port by port as ports are written anew
// (legacy_linux.go).
//
// macvlan and ipvlan links have no node-side port: the same drops filter
// the pod link's own egress, in a chain of its own in a netdev table of the
// pod's netns (egress_linux.go); they ask the port's values directly
// (planOwner) instead of the shared sets (sharedOwner), from one list of
// rules (portRules).
//
// What it must not do: touch any table but its own; know of pods,
// Kubernetes or bridges (the caller names the port and says what it owns).
package portsecurity
