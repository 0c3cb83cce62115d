// Package wscompare measures the live seat map's websocket fan-out beside the libraries
// that do the same work with their own poller and framing: SeatFlow's transport
// (internal/wstransport: one epoll poller for idle sockets, messages framed once and
// written with writev by a few writers), lesismal/nbio (nbhttp and its websocket package)
// and gobwas/ws (its zero-copy upgrade and a read goroutine per connection). Each server
// runs in a process of its own, started by Run from the command the caller gives, and
// does the same job: N idle watchers connect, then one message of the seat map's size is
// broadcast to all of them, round after round. The watchers are clients in Run's process,
// so their work is not counted in the server's.
//
// Per server it reports the resident memory each watcher adds (VmRSS after the watchers
// connected, and after the broadcasts, less VmRSS before any connected), the CPU time
// (user and system, getrusage) the server spent per message delivered over the rounds,
// and how long one broadcast took to reach every watcher. docs/DESIGN.md ("Why the
// websocket transport is our own") has the figures and the command that produced them.
package wscompare

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Servers are the servers Run can measure, in the order it measures them by default.
var Servers = []string{"seatflow", "nbio", "gobwas"}

// Options is what Run measures.
type Options struct {
	Servers  []string // default: Servers
	Watchers int      // default 10,000
	Rounds   int      // broadcasts, default 20
	// Size is the payload bytes of the libraries' message; 0: the size of the message the
	// seatflow server sent, or DefaultSize when it was not measured first.
	Size int
	// Settle is how long the server is left alone after the watchers connected before
	// its memory is read (default 1 s).
	Settle time.Duration
	// Command returns the command that serves one server (Serve with its name, on the
	// command's standard input and output).
	Command func(server string) *exec.Cmd
	// Profile, when set, is a directory each server writes a heap profile to
	// (SERVER.heap) with every watcher connected.
	Profile string
	// Log receives progress lines; nil: none.
	Log io.Writer
}

// DefaultSize is a seat map's SNAPSHOT of a hall of 211 seats with seat ids and statuses
// selected: the message the seatflow server renders.
const DefaultSize = 10752

// Result is one server's figures.
type Result struct {
	Server       string
	Watchers     int
	MessageBytes int // payload bytes of the message the watchers received
	BaseKiB      int // VmRSS before any watcher connected
	ConnectedKiB int // VmRSS with every watcher connected
	AfterKiB     int // VmRSS after the broadcasts
	LiveKiB      int // VmRSS then once the freed memory was returned to the system
	HeapKiB      int // the Go heap in use with every watcher connected (after a collection)
	StackKiB     int // the goroutines' stacks then
	BaseHeapKiB  int // the same before any watcher connected
	BaseStackKiB int
	CPU          time.Duration // the server's user+system time over the broadcasts
	Delivered    int64         // messages the watchers received over the broadcasts
	Passes       []time.Duration
	Dropped      int // messages the server did not queue (a watcher's queue full)
}

// KiBPerWatcher is what each watcher added to the server's resident memory once connected.
func (r Result) KiBPerWatcher() float64 {
	return float64(r.ConnectedKiB-r.BaseKiB) / float64(r.Watchers)
}

// KiBPerWatcherAfter is the same after the broadcasts (buffers grown or kept).
func (r Result) KiBPerWatcherAfter() float64 {
	return float64(r.AfterKiB-r.BaseKiB) / float64(r.Watchers)
}

// LiveKiBPerWatcher is KiBPerWatcher once the freed memory was returned to the system
// (the memory the watchers hold, without what their handshakes left).
func (r Result) LiveKiBPerWatcher() float64 {
	return float64(r.LiveKiB-r.BaseKiB) / float64(r.Watchers)
}

// HeapPerWatcher and StackPerWatcher are what each watcher added to the Go heap and to
// the goroutines' stacks, in KiB.
func (r Result) HeapPerWatcher() float64 {
	return float64(r.HeapKiB-r.BaseHeapKiB) / float64(r.Watchers)
}

func (r Result) StackPerWatcher() float64 {
	return float64(r.StackKiB-r.BaseStackKiB) / float64(r.Watchers)
}

// CPUPerMessage is the server's CPU time per message delivered.
func (r Result) CPUPerMessage() time.Duration {
	if r.Delivered == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Delivered)
}

// Pass returns the median and the slowest broadcast pass.
func (r Result) Pass() (median, slowest time.Duration) {
	if len(r.Passes) == 0 {
		return 0, 0
	}
	p := slices.Clone(r.Passes)
	slices.Sort(p)
	return p[len(p)/2], p[len(p)-1]
}

// Run measures each server in turn and returns their figures.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	if len(opts.Servers) == 0 {
		opts.Servers = Servers
	}
	if opts.Watchers <= 0 {
		opts.Watchers = 10000
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 20
	}
	if opts.Settle <= 0 {
		opts.Settle = time.Second
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	size := opts.Size
	var results []Result
	for _, name := range opts.Servers {
		if !slices.Contains(Servers, name) {
			return results, fmt.Errorf("no server %q (%s)", name, strings.Join(Servers, ", "))
		}
		if size == 0 && name != "seatflow" {
			size = DefaultSize
		}
		r, err := measure(ctx, opts, name, size)
		if err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		if size == 0 {
			size = r.MessageBytes
		}
		results = append(results, r)
	}
	return results, nil
}

// child is a server process and the lines it answers with.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// ask sends a command and returns the fields of the answer.
func (c *child) ask(cmd string) ([]string, error) {
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return nil, err
	}
	if !c.out.Scan() {
		if err := c.out.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("the server ended")
	}
	f := strings.Fields(c.out.Text())
	if len(f) == 0 || f[0] == "error" {
		return nil, fmt.Errorf("%s: %s", cmd, c.out.Text())
	}
	return f, nil
}

func (c *child) number(cmd string) (int64, error) {
	f, err := c.ask(cmd)
	if err != nil {
		return 0, err
	}
	if len(f) < 2 {
		return 0, fmt.Errorf("%s: answer %q", cmd, f)
	}
	return strconv.ParseInt(f[1], 10, 64)
}

// heap asks for the Go heap and stacks in use.
func (c *child) heap() (heap, stack int, err error) {
	f, err := c.ask("heap")
	if err != nil {
		return 0, 0, err
	}
	if len(f) < 3 {
		return 0, 0, fmt.Errorf("heap: answer %q", f)
	}
	heap, err = strconv.Atoi(f[1])
	if err == nil {
		stack, err = strconv.Atoi(f[2])
	}
	return heap, stack, err
}

func measure(ctx context.Context, opts Options, name string, size int) (Result, error) {
	r := Result{Server: name, Watchers: opts.Watchers}
	cmd := opts.Command(name)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return r, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, err
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	defer func() {
		_, _ = io.WriteString(in, "quit\n")
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	f, err := c.ask("addr")
	if err != nil || len(f) < 3 {
		return r, fmt.Errorf("no address: %v %q", err, f)
	}
	url := "ws://" + f[1] + f[2]
	base, err := c.number("rss")
	if err != nil {
		return r, err
	}
	r.BaseKiB = int(base)
	if r.BaseHeapKiB, r.BaseStackKiB, err = c.heap(); err != nil {
		return r, err
	}

	fmt.Fprintf(opts.Log, "%s: connecting %d watchers to %s\n", name, opts.Watchers, url)
	crowd, err := connect(ctx, url, name == "seatflow", opts.Watchers)
	if err != nil {
		return r, err
	}
	defer crowd.close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := c.number("count")
		if err != nil {
			return r, err
		}
		if n == int64(opts.Watchers) {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d watchers registered after 60 s", n, opts.Watchers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(opts.Settle)
	rss, err := c.number("rss")
	if err != nil {
		return r, err
	}
	r.ConnectedKiB = int(rss)
	if r.HeapKiB, r.StackKiB, err = c.heap(); err != nil {
		return r, err
	}
	live, err := c.number("rss free")
	if err != nil {
		return r, err
	}
	r.LiveKiB = int(live)
	if opts.Profile != "" {
		if _, err := c.ask("profile " + filepath.Join(opts.Profile, name+".heap")); err != nil {
			return r, err
		}
	}

	fmt.Fprintf(opts.Log, "%s: %d rounds\n", name, opts.Rounds)
	cpu0, err := c.number("cpu")
	if err != nil {
		return r, err
	}
	for round := range opts.Rounds {
		want := crowd.received() + int64(opts.Watchers)
		start := time.Now()
		dropped, err := c.number("broadcast " + strconv.Itoa(size))
		if err != nil {
			return r, err
		}
		r.Dropped += int(dropped)
		if !crowd.await(ctx, want-dropped, 60*time.Second) {
			return r, fmt.Errorf("round %d: %d of %d messages received after 60 s", round+1,
				crowd.received()-(want-int64(opts.Watchers)), int64(opts.Watchers)-dropped)
		}
		r.Passes = append(r.Passes, time.Since(start))
	}
	cpu1, err := c.number("cpu")
	if err != nil {
		return r, err
	}
	r.CPU = time.Duration(cpu1-cpu0) * time.Microsecond
	r.Delivered = crowd.received()
	r.MessageBytes = crowd.lastSize()
	rss, err = c.number("rss")
	if err != nil {
		return r, err
	}
	r.AfterKiB = int(rss)
	if lost := crowd.lost(); lost > 0 {
		return r, fmt.Errorf("%d watchers lost their connection", lost)
	}
	return r, nil
}

// Table writes the results as a Markdown table.
func Table(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| server | watchers | message bytes | RSS KiB per watcher, connected | freed memory returned | of which Go heap | of which stacks | RSS after the broadcasts | CPU µs per delivered message | broadcast pass, median (slowest) | not queued |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		med, slow := r.Pass()
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s (%s) | %d |\n", r.Server, r.Watchers, r.MessageBytes,
			r.KiBPerWatcher(), r.LiveKiBPerWatcher(), r.HeapPerWatcher(), r.StackPerWatcher(), r.KiBPerWatcherAfter(), float64(r.CPUPerMessage())/float64(time.Microsecond),
			med.Round(time.Millisecond), slow.Round(time.Millisecond), r.Dropped)
	}
}

// LoadAverage is the first line of /proc/loadavg ("" where there is none).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
