package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddr returns the function that names the client address of a request: the
// remote address, unless that is one of the trusted proxies (networks, e.g.
// "10.0.0.0/8"), in which case the rightmost X-Forwarded-For address that is not a
// trusted proxy (an address a client puts at the left of that header is never believed).
// Per-address limits (cost budgets of anonymous clients, websocket caps) count by it.
func ClientAddr(trusted []netip.Prefix) func(*http.Request) string {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) string {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || len(trusted) == 0 || !isTrusted(addr) {
			return host
		}
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				return host // a malformed hop: believe nothing beyond the proxy
			}
			if !isTrusted(hop) {
				return hop.Unmap().String()
			}
		}
		return host
	}
}

// ParseTrustedProxies reads a comma-separated list of networks or addresses.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, err
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
