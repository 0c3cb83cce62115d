package wscompare

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	nblog "github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"
	nbws "github.com/lesismal/nbio/nbhttp/websocket"

	"seatflow"
	"seatflow/graph"
	"seatflow/internal/live"
	"seatflow/internal/nodeid"
	"seatflow/internal/wstransport"
)

// server is one of the servers measured: its watchers, and a broadcast to all of them.
type server interface {
	addr() string // host:port
	path() string // the websocket's path
	watchers() int
	// broadcast sends one message of size payload bytes to every watcher (the seatflow
	// server: a seat-map SNAPSHOT of its own size) and returns how many it could not
	// queue; the messages may still be on their way when it returns.
	broadcast(size int) int
	close()
}

// Serve runs the server named kind and answers the commands of Run, one a line, on in and
// out: "addr", "rss" (VmRSS in KiB; "rss free" after returning the freed memory), "heap" (the Go heap and stacks in use, KiB, after a
// collection), "profile FILE" (a heap profile), "count" (watchers connected), "cpu" (user and
// system time in µs), "broadcast SIZE" (the messages not queued), "quit".
func Serve(kind string, in io.Reader, out io.Writer) error {
	var (
		s   server
		err error
	)
	switch kind {
	case "seatflow":
		s, err = startSeatflow()
	case "nbio":
		s, err = startNbio()
	case "gobwas":
		s, err = startGobwas()
	default:
		err = fmt.Errorf("no server %q", kind)
	}
	if err != nil {
		return err
	}
	defer s.close()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "addr":
			fmt.Fprintln(out, "addr", s.addr(), s.path())
		case "rss": // "rss free": after returning the freed memory to the system
			if len(f) > 1 && f[1] == "free" {
				debug.FreeOSMemory()
			}
			kib, err := residentKiB()
			if err != nil {
				fmt.Fprintln(out, "error", err)
				continue
			}
			fmt.Fprintln(out, "rss", kib)
		case "heap": // the Go heap and stacks in use, in KiB
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Fprintln(out, "heap", m.HeapInuse>>10, m.StackInuse>>10)
		case "profile": // a heap profile (pprof) to the file named
			if len(f) < 2 {
				fmt.Fprintln(out, "error no file")
				continue
			}
			if err := writeHeapProfile(f[1]); err != nil {
				fmt.Fprintln(out, "error", err)
				continue
			}
			fmt.Fprintln(out, "profile", f[1])
		case "count":
			fmt.Fprintln(out, "count", s.watchers())
		case "cpu":
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
				fmt.Fprintln(out, "error", err)
				continue
			}
			fmt.Fprintln(out, "cpu", (ru.Utime.Nano()+ru.Stime.Nano())/1000)
		case "broadcast":
			size := DefaultSize
			if len(f) > 1 {
				size, _ = strconv.Atoi(f[1])
			}
			fmt.Fprintln(out, "sent", s.broadcast(size))
		case "quit":
			return nil
		default:
			fmt.Fprintln(out, "error unknown command", f[0])
		}
	}
	return sc.Err()
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// residentKiB is the process' VmRSS.
func residentKiB() (int, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}

// message is a payload of size bytes.
func message(size int) []byte {
	return bytes.Repeat([]byte{'x'}, size)
}

// showtimeID is the showtime the seatflow server's watchers watch.
var showtimeID = nodeid.Encode(nodeid.Showtime, 7)

// hallSeats is the seats of the seatflow server's map: a SNAPSHOT of them with the
// watchers' selection is DefaultSize bytes with its graphql-transport-ws envelope.
const hallSeats = 211

// seatflowServer is SeatFlow's websocket transport as the instance serves it (the real
// schema, a Registry with its writers and poller), its seat-map watches kept here in
// place of the live hub's: a broadcast puts a SNAPSHOT into every watch's sink, as the
// hub does for a showtime's watchers.
type seatflowServer struct {
	ln    net.Listener
	srv   *http.Server
	reg   *wstransport.Registry
	seats []seatflow.SeatState

	mu      sync.Mutex
	sinks   []live.Sink
	version int
}

func startSeatflow() (*seatflowServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &seatflowServer{ln: ln, reg: &wstransport.Registry{}}
	for i := range hallSeats {
		status := seatflow.SeatAvailable
		if i%3 == 0 {
			status = seatflow.SeatSold
		}
		s.seats = append(s.seats, seatflow.SeatState{ShowtimeID: 7, Status: status,
			Seat: seatflow.Seat{ID: 1000 + i, HallID: 1, Row: string(rune('A' + i/20)), Number: 1 + i%20, Kind: seatflow.SeatStandard, Sellable: true}})
	}
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}))
	gql.AddTransport(wstransport.New(wstransport.Config{SeatMaps: s, Registry: s.reg,
		PingPong: time.Hour, KeepAlive: time.Hour, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}))
	s.srv = &http.Server{Handler: gql, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *seatflowServer) WatchSeatMap(_ context.Context, _ int, sink live.Sink) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = append(s.sinks, sink)
	return nil
}

func (s *seatflowServer) addr() string { return s.ln.Addr().String() }
func (s *seatflowServer) path() string { return "/" }

func (s *seatflowServer) watchers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sinks)
}

func (s *seatflowServer) broadcast(int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	ev := &seatflow.SeatMapEvent{Kind: seatflow.EventSnapshot, ShowtimeID: 7, Version: s.version, Seats: s.seats}
	dropped := 0
	for _, sink := range s.sinks {
		if !sink.Put(ev) {
			dropped++
		}
	}
	return dropped
}

func (s *seatflowServer) close() {
	_ = s.srv.Close()
	s.reg.Close()
}

// nbioServer is lesismal/nbio's HTTP engine and websocket upgrader as its examples serve
// them (the engine's pollers read every socket; a write goes to the socket at once and
// what the socket did not take waits for the poller), broadcasting with WriteMessage.
type nbioServer struct {
	address string
	engine  *nbhttp.Engine

	mu    sync.Mutex
	conns map[*nbws.Conn]struct{}
}

func startNbio() (*nbioServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the engine's own listener
	if err != nil {
		return nil, err
	}
	address := ln.Addr().String()
	ln.Close()
	nblog.Output = os.Stderr // its log is not the answers to Run
	s := &nbioServer{address: address, conns: map[*nbws.Conn]struct{}{}}
	u := nbws.NewUpgrader()
	u.KeepaliveTime = time.Hour
	u.OnOpen(func(c *nbws.Conn) {
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
	})
	u.OnClose(func(c *nbws.Conn, _ error) {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		_, _ = u.Upgrade(w, r, nil)
	})
	s.engine = nbhttp.NewEngine(nbhttp.Config{Network: "tcp", Addrs: []string{address}, Handler: mux})
	if err := s.engine.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *nbioServer) addr() string { return s.address }
func (s *nbioServer) path() string { return "/ws" }

func (s *nbioServer) watchers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *nbioServer) broadcast(size int) int {
	msg := message(size)
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped := 0
	for c := range s.conns {
		if c.WriteMessage(nbws.TextMessage, msg) != nil {
			dropped++
		}
	}
	return dropped
}

func (s *nbioServer) close() { s.engine.Stop() }

// gobwasServer is gobwas/ws as its documentation serves many connections without an
// event loop: the zero-copy upgrade on the accepted socket, a goroutine per connection
// reading with wsutil, and a broadcast that frames the message once (ws.CompileFrame) and
// writes the bytes to every socket from as many goroutines as Go has processors. (Its
// poller for idle connections, mailru/easygo's netpoll, is not on the module proxy.)
type gobwasServer struct {
	ln net.Listener

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startGobwas() (*gobwasServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &gobwasServer{ln: ln, conns: map[net.Conn]struct{}{}}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s, nil
}

func (s *gobwasServer) serve(conn net.Conn) {
	defer conn.Close()
	if _, err := ws.Upgrade(conn); err != nil {
		return
	}
	s.mu.Lock()
	s.conns[conn] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	for {
		if _, _, err := wsutil.ReadClientData(conn); err != nil {
			return
		}
	}
}

func (s *gobwasServer) addr() string { return s.ln.Addr().String() }
func (s *gobwasServer) path() string { return "/ws" }

func (s *gobwasServer) watchers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *gobwasServer) broadcast(size int) int {
	frame, err := ws.CompileFrame(ws.NewTextFrame(message(size)))
	if err != nil {
		return s.watchers()
	}
	s.mu.Lock()
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var (
		wg      sync.WaitGroup
		dropped int
		dmu     sync.Mutex
	)
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(conns); i += workers {
				_ = conns[i].SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := conns[i].Write(frame); err != nil {
					dmu.Lock()
					dropped++
					dmu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return dropped
}

func (s *gobwasServer) close() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}
