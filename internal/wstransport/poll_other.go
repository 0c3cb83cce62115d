//go:build !linux

package wstransport

import "errors"

// poller is Linux's (poll_linux.go); elsewhere every connection has a read loop.
type poller struct{}

func newPoller() *poller            { return nil }
func (p *poller) add(*conn) error   { return errors.New("wstransport: no poller") }
func (p *poller) watch(*conn) error { return errors.New("wstransport: no poller") }
func (p *poller) forget(*conn)      {}
func (p *poller) run()              {}
func (p *poller) stop()             {}
