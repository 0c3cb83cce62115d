//go:build !linux

package bench

// framePoller reads each client on a goroutine of its own off Linux.
type framePoller struct{ gate readGate }

func newFramePoller() (*framePoller, error) { return &framePoller{}, nil }

func (p *framePoller) add(c *rawClient) error {
	go func() {
		buf := make([]byte, 64<<10)
		for {
			p.gate.wait()
			n, err := c.nc.Read(buf)
			if err != nil || !c.take(buf[:n]) {
				c.end()
				return
			}
		}
	}()
	return nil
}

func (p *framePoller) stop() { p.gate.release() }
