package faults

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// toxiproxyAddr is the toxiproxy API (scripts/toxiproxy.sh starts it).
func toxiproxyAddr() string {
	if v := os.Getenv("SEATFLOW_TEST_TOXIPROXY"); v != "" {
		return v
	}
	return "127.0.0.1:8474"
}

// Proxy is one toxiproxy proxy between an instance and a store.
type Proxy struct{ *toxiproxy.Proxy }

// newProxy creates a proxy to upstream listening on a free loopback port, deleted when
// the test ends.
func newProxy(t testing.TB, c *toxiproxy.Client, name, upstream string) *Proxy {
	t.Helper()
	p, err := c.CreateProxy(name, "127.0.0.1:0", upstream)
	if err != nil {
		t.Fatalf("create toxiproxy proxy %s (is toxiproxy running? bash scripts/toxiproxy.sh): %v", name, err)
	}
	t.Cleanup(func() { _ = p.Delete() })
	return &Proxy{p}
}

// Latency adds latency ± jitter to everything the store sends back.
func (p *Proxy) Latency(ms, jitterMS int) error {
	_, err := p.AddToxic("latency", "latency", "downstream", 1, toxiproxy.Attributes{"latency": ms, "jitter": jitterMS})
	return err
}

// Reset resets (TCP RST) every connection that sends data while it is on.
func (p *Proxy) Reset() error {
	_, err := p.AddToxic("reset", "reset_peer", "upstream", 1, toxiproxy.Attributes{"timeout": 0})
	return err
}

// Blackhole stops every byte in both directions (toxiproxy's timeout toxic with no
// timeout): connections stay open and silent, as behind a network partition that drops
// packets.
func (p *Proxy) Blackhole() error {
	for _, stream := range []string{"upstream", "downstream"} {
		if _, err := p.AddToxic("blackhole-"+stream, "timeout", stream, 1, toxiproxy.Attributes{"timeout": 0}); err != nil {
			return err
		}
	}
	return nil
}

// Heal removes every toxic and enables the proxy.
func (p *Proxy) Heal() error {
	fresh, err := p.Toxics()
	if err != nil {
		return err
	}
	for _, tx := range fresh {
		if err := p.RemoveToxic(tx.Name); err != nil {
			return err
		}
	}
	return p.Enable()
}

// hostPort reads host:port out of a go-sql-driver DSN (user@tcp(host:port)/db).
func hostPortOfDSN(dsn string) (string, error) {
	i, j := strings.Index(dsn, "tcp("), strings.Index(dsn, ")/")
	if i < 0 || j < i {
		return "", fmt.Errorf("DSN %q: want user@tcp(host:port)/", dsn)
	}
	hp := dsn[i+4 : j]
	if _, _, err := net.SplitHostPort(hp); err != nil {
		return "", err
	}
	return hp, nil
}

// withHostPort puts hp in place of a DSN's tcp(host:port).
func withHostPort(dsn, hp string) string {
	i, j := strings.Index(dsn, "tcp("), strings.Index(dsn, ")/")
	return dsn[:i+4] + hp + dsn[j:]
}
