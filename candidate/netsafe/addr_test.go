package netsafe

import (
	"net/netip"
	"testing"

	"github.com/agentrt/agentrt/candidate"
)

// TestIsPrivateHost: the N01 anchor (spec candidate §23.2) holds for the
// schema-level host rule the client applies (candidate.IsPrivateHost):
// the MUST set, the odd spellings a WHATWG parser normalizes, and the
// addresses that are explicitly not private.
func TestIsPrivateHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		// N01 block list.
		{"127.0.0.1", true}, {"10.1.2.3", true}, {"172.16.0.1", true}, {"192.168.0.1", true},
		{"169.254.169.254", true}, {"100.64.0.1", true}, {"198.18.0.1", true}, {"224.0.0.1", true},
		{"255.255.255.255", true}, {"0.0.0.0", true}, {"::", true}, {"::1", true}, {"fe80::1", true},
		{"febf::1", true}, {"fc00::1", true}, {"fd00::1", true}, {"::ffff:8.8.8.8", true},
		// N01 allow list.
		{"8.8.8.8", false}, {"172.32.0.1", false}, {"100.128.0.1", false}, {"198.20.0.1", false},
		{"2001:4860:4860::8888", false},
		// §1: explicitly not private at the schema level.
		{"fec0::1", false}, {"64:ff9b::7f00:1", false}, {"2002:7f00:1::1", false}, {"192.0.2.1", false},
		// Spellings a browser reads as 127.0.0.1 (§1).
		{"127.1", true}, {"0x7f000001", true}, {"2130706433", true}, {"017700000001", true}, {"0x7f.1", true},
		{"[::1]", true}, {"[::ffff:127.0.0.1]", true}, {"LOCALHOST", true},
		// Names.
		{"localhost", true}, {"a.localhost", true}, {"metadata.google.internal", true}, {"metadata.google", true},
		{"example.com", false}, {"localhost.example.com", false}, {"s3.amazonaws.com", false},
		// Boundaries of the IPv4 ranges.
		{"100.63.255.255", false}, {"100.127.255.255", true}, {"172.15.255.255", false}, {"172.31.255.255", true},
		{"198.17.255.255", false}, {"198.19.255.255", true}, {"223.255.255.255", false}, {"169.253.0.1", false},
		// IPv6 boundaries.
		{"fe7f::1", false}, {"fec0::", false}, {"fbff::1", false},
		// A first hextet written with fewer than four digits has leading
		// zeros: fc0:: is 0fc0::, outside fc00::/7; fe8:: is outside fe80::/10.
		{"fc0::", false}, {"fd::1", false}, {"[fc0::1]", false}, {"fe8::", false}, {"feb::1", false},
		{"fc00::", true}, {"fdff:1::", true}, {"FC00::1", true}, {"feb0::1", true},
		// As the reference reads them: a zone makes the URL invalid, and the
		// raw text still starts "fe8"; a user part is not the host.
		{"fe80::1%eth0", true}, {"user@127.0.0.1", true},
		// Not a host at all: the caller's grammar refuses it.
		{"", false}, {"a b", false},
	} {
		if got := candidate.IsPrivateHost(tc.host); got != tc.want {
			t.Errorf("IsPrivateHost(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

// TestBlocked: the resolver set is IsPrivateAddr plus spec candidate
// §3.6's SHOULD set (multicast, NAT64 and 6to4 embedding an internal IPv4
// address).
func TestBlocked(t *testing.T) {
	for _, tc := range []struct {
		addr           string
		private, block bool
	}{
		{"127.0.0.1", true, true},
		{"8.8.8.8", false, false},
		{"ff02::1", false, true},
		{"64:ff9b::7f00:1", false, true},
		{"64:ff9b::808:808", false, false},
		{"2002:7f00:1::1", false, true},
		{"2002:a00:1::1", false, true},
		{"2002:808:808::1", false, false},
		{"fec0::1", false, false},
		{"::ffff:8.8.8.8", true, true},
		{"fe80::1%eth0", true, true},
		{"2001:4860:4860::8888", false, false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := IsPrivateAddr(a); got != tc.private {
			t.Errorf("IsPrivateAddr(%s) = %v, want %v", tc.addr, got, tc.private)
		}
		if got := Blocked(a); got != tc.block {
			t.Errorf("Blocked(%s) = %v, want %v", tc.addr, got, tc.block)
		}
	}
	if !IsPrivateAddr(netip.Addr{}) || !Blocked(netip.Addr{}) {
		t.Error("the invalid address is not private")
	}
}

// FuzzIsPrivateHost: the two owners agree — a host that is already a
// canonical IP address is private by the schema's rule
// (candidate.IsPrivateHost) exactly when the resolver's address rule
// (IsPrivateAddr) says so.
func FuzzIsPrivateHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "0x7f.1", "[::ffff:1.2.3.4]", "localhost", "xn--nxasmq6b", "fe80::1", "1.2.3.4.5", "%31.2.3.4", "[::1]:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		got := candidate.IsPrivateHost(host)
		if a, err := netip.ParseAddr(host); err == nil && a.Zone() == "" && a.String() == host {
			if want := IsPrivateAddr(a); got != want {
				t.Fatalf("IsPrivateHost(%q) = %v, IsPrivateAddr = %v", host, got, want)
			}
		}
	})
}
