// Command vxlansend sends one VXLAN packet by plain UDP, as any process
// that can reach a node could: an Ethernet broadcast ARP request from a
// chosen MAC and sender address, asking for a target address, in a chosen
// VNI. The e2e suite runs it in unprivileged pods and in node namespaces.
//
//	vxlansend DST PORT VNI MAC SENDER-IP TARGET-IP
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vxlansend:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("usage: vxlansend DST PORT VNI MAC SENDER-IP TARGET-IP")
	}
	vni, err := strconv.ParseUint(args[2], 10, 24)
	if err != nil {
		return fmt.Errorf("vni %q: %w", args[2], err)
	}
	mac, err := net.ParseMAC(args[3])
	if err != nil {
		return err
	}
	sender, target := net.ParseIP(args[4]).To4(), net.ParseIP(args[5]).To4()
	if sender == nil || target == nil {
		return fmt.Errorf("sender %q and target %q must be IPv4 addresses", args[4], args[5])
	}
	b := []byte{0x08, 0, 0, 0, byte(vni >> 16), byte(vni >> 8), byte(vni), 0}
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	b = append(b, mac...)
	b = append(b, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1)
	b = append(b, mac...)
	b = append(b, sender...)
	b = append(b, 0, 0, 0, 0, 0, 0)
	b = append(b, target...)
	c, err := net.Dial("udp4", net.JoinHostPort(args[0], args[1]))
	if err != nil {
		return err
	}
	defer c.Close()
	// A few copies: one lost datagram must not make an attack look stopped.
	for range 3 {
		if _, err := c.Write(b); err != nil {
			return err
		}
	}
	return nil
}
