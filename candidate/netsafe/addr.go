package netsafe

import (
	"net/netip"
	"strings"

	"github.com/agentrt/agentrt/internal/whatwgurl"
)

// IsPrivateAddr reports whether a is in the address set every candidate
// resolver must refuse (spec candidate §1 isPrivateHost, §3.6): loopback,
// private, link-local, shared, benchmarking, unspecified, multicast and
// reserved IPv4, and the IPv6 unspecified, loopback, link-local (fe80::/10)
// and unique-local (fc00::/7) addresses and every IPv4-mapped address. An
// invalid address is private: nothing unknown is reachable.
func IsPrivateAddr(a netip.Addr) bool {
	a = a.WithZone("")
	switch {
	case !a.IsValid():
		return true
	case a.Is4():
		return privateIPv4(a.As4())
	case a.Is4In6():
		return true
	}
	b := a.As16()
	switch {
	case a.IsUnspecified(), a.IsLoopback():
		return true
	case b[0] == 0xfe && b[1]&0xc0 == 0x80: // fe80::/10
		return true
	case b[0]&0xfe == 0xfc: // fc00::/7
		return true
	}
	return false
}

// privateIPv4 is the IPv4 half of IsPrivateAddr.
func privateIPv4(ip [4]byte) bool {
	a, b := ip[0], ip[1]
	switch {
	case a == 0, a == 10, a == 127:
		return true
	case a == 100 && b >= 64 && b <= 127:
		return true
	case a == 169 && b == 254:
		return true
	case a == 172 && b >= 16 && b <= 31:
		return true
	case a == 192 && b == 168:
		return true
	case a == 198 && (b == 18 || b == 19):
		return true
	case a >= 224:
		return true
	}
	return false
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Blocked reports whether a resolver refuses to connect to a: every
// IsPrivateAddr address, and also IPv6 multicast (ff00::/8) and the NAT64
// (64:ff9b::/96) and 6to4 (2002::/16) addresses whose embedded IPv4
// address is private (spec candidate §3.6's SHOULD set).
func Blocked(a netip.Addr) bool {
	if IsPrivateAddr(a) {
		return true
	}
	a = a.WithZone("")
	if !a.Is6() {
		return false
	}
	b := a.As16()
	switch {
	case b[0] == 0xff:
		return true
	case nat64.Contains(a):
		return privateIPv4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		return privateIPv4([4]byte(b[2:6]))
	}
	return false
}

// normalizeHost returns host as JavaScript's URL would serialize it
// (lower-case, IDNA ASCII, IPv4 spellings such as 127.1 and 0x7f000001
// resolved, IPv6 compressed), without brackets.
func normalizeHost(host string) (string, bool) {
	h := strings.ToLower(host)
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	u, err := whatwgurl.Parse("http://" + h + "/")
	if err != nil || u.Port != "" || u.Pathname != "/" || u.Username != "" || u.Password != "" || u.Search != "" || u.Hash != "" {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(u.Hostname, "["), "]"), true
}
