// Package lanaddr lists the addresses of this machine that another machine
// on its network could reach, for the hints the demo and netdiag print
// ("the other machine joins with http://ADDR:PORT"). Reading the
// interfaces sends nothing.
package lanaddr

import "net"

// IPv4s lists this machine's non-loopback, non-link-local IPv4 addresses
// on interfaces that are up.
func IPv4s() []net.IP {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip4 := ipn.IP.To4(); ip4 != nil && !ip4.IsLoopback() && !ip4.IsLinkLocalUnicast() {
					out = append(out, ip4)
				}
			}
		}
	}
	return out
}
