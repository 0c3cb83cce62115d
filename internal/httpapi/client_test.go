package httpapi

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"
)

// TestClientAddr: behind trusted proxies the client is the rightmost X-Forwarded-For
// address that is not a proxy; what a client writes at the left of the header, and the
// header of a peer that is no proxy, are never believed.
func TestClientAddr(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 192.168.1.1, fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		trusted []netip.Prefix
		remote  string
		xff     []string // one entry per header line
		want    string
	}{
		{"NoProxiesTrusted", nil, "10.0.0.1:5000", []string{"1.2.3.4"}, "10.0.0.1"},
		{"PeerNotAProxy", trusted, "203.0.113.9:5000", []string{"1.2.3.4"}, "203.0.113.9"},
		{"ProxyForwardsTheClient", trusted, "10.0.0.1:5000", []string{"1.2.3.4"}, "1.2.3.4"},
		{"RightmostUntrusted", trusted, "10.0.0.1:5000", []string{"6.6.6.6, 1.2.3.4, 10.0.0.2, 192.168.1.1"}, "1.2.3.4"},
		{"ForgedLeftEntriesIgnored", trusted, "10.0.0.1:5000", []string{"127.0.0.1, 1.2.3.4"}, "1.2.3.4"},
		{"HeaderLinesJoined", trusted, "10.0.0.1:5000", []string{"6.6.6.6", "1.2.3.4, 10.0.0.2"}, "1.2.3.4"},
		{"OnlyProxiesForwarded", trusted, "10.0.0.1:5000", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.1"},
		{"NoHeader", trusted, "10.0.0.1:5000", nil, "10.0.0.1"},
		{"MalformedHopBelievesNothingBeyond", trusted, "10.0.0.1:5000", []string{"1.2.3.4, not-an-ip, 10.0.0.2"}, "10.0.0.1"},
		{"SpacesAroundHops", trusted, "10.0.0.1:5000", []string{"  1.2.3.4  ,10.0.0.2 "}, "1.2.3.4"},
		{"MappedAddressesUnmapped", trusted, "[::ffff:10.0.0.1]:5000", []string{"::ffff:1.2.3.4"}, "1.2.3.4"},
		{"IPv6Proxy", trusted, "[fd00::1]:5000", []string{"2001:db8::7"}, "2001:db8::7"},
		{"SingleAddressTrusted", trusted, "192.168.1.1:5000", []string{"1.2.3.4"}, "1.2.3.4"},
		{"NeighbourOfASingleAddressNotTrusted", trusted, "192.168.1.2:5000", []string{"1.2.3.4"}, "192.168.1.2"},
		{"RemoteWithoutPort", trusted, "10.0.0.1", []string{"1.2.3.4"}, "1.2.3.4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := ClientAddr(c.trusted)(r); got != c.want {
				t.Errorf("client = %q, want %q", got, c.want)
			}
		})
	}
}

// TestParseTrustedProxies: networks and single addresses, separated by commas; a network
// is kept masked; anything else is an error.
func TestParseTrustedProxies(t *testing.T) {
	cases := []struct {
		name, list, want string // want: the prefixes, or "error"
	}{
		{"Empty", "", "[]"},
		{"Networks", "10.0.0.0/8,fd00::/8", "[10.0.0.0/8 fd00::/8]"},
		{"SingleAddresses", "192.168.1.1, ::1", "[192.168.1.1/32 ::1/128]"},
		{"NetworkMasked", "10.1.2.3/8", "[10.0.0.0/8]"},
		{"BlanksSkipped", " , 10.0.0.0/8 ,, ", "[10.0.0.0/8]"},
		{"BadAddress", "10.0.0.300", "error"},
		{"BadNetwork", "10.0.0.0/33", "error"},
		{"Hostname", "proxy.internal", "error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseTrustedProxies(c.list)
			s := fmt.Sprint(got)
			if err != nil {
				s = "error"
			}
			if s != c.want {
				t.Errorf("ParseTrustedProxies(%q) = %s (%v), want %s", c.list, s, err, c.want)
			}
		})
	}
}
