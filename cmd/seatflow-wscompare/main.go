// Command seatflow-wscompare measures the live seat map's websocket fan-out beside
// lesismal/nbio and gobwas/ws (package internal/tooling/wscompare) and prints the
// table of docs/DESIGN.md's "Why the websocket transport is our own". Each server runs
// in a child process of this binary (-serve).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"seatflow/internal/tooling/wscompare"
)

func main() {
	serve := flag.String("serve", "", "serve this server on standard input and output (the child processes)")
	watchers := flag.Int("n", 10000, "watchers per server")
	rounds := flag.Int("rounds", 20, "broadcasts")
	servers := flag.String("servers", strings.Join(wscompare.Servers, ","), "servers to measure, in order")
	size := flag.Int("size", 0, "payload bytes of the libraries' message (0: the seatflow server's)")
	profile := flag.String("profile", "", "directory each server writes a heap profile to (SERVER.heap) with every watcher connected")
	flag.Parse()
	if *serve != "" {
		if err := wscompare.Serve(*serve, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "seatflow-wscompare:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "seatflow-wscompare:", err)
		os.Exit(1)
	}
	load := wscompare.LoadAverage()
	start := time.Now()
	results, err := wscompare.Run(ctx, wscompare.Options{Servers: strings.Split(*servers, ","), Watchers: *watchers,
		Rounds: *rounds, Size: *size, Profile: *profile, Log: os.Stderr,
		Command: func(server string) *exec.Cmd { return exec.Command(self, "-serve", server) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "seatflow-wscompare:", err)
		os.Exit(1)
	}
	fmt.Printf("%d watchers, %d rounds; load average at start: %s; took %s\n\n", *watchers, *rounds, load, time.Since(start).Round(time.Second))
	wscompare.Table(os.Stdout, results)
}
