package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// failoverNodes is the cluster of the failover scenario (scripts/redis-cluster.sh failover).
func failoverNodes() string {
	if v := os.Getenv("SEATFLOW_TEST_FAILOVER_CLUSTER"); v != "" {
		return v
	}
	return "127.0.0.1:7201,127.0.0.1:7202,127.0.0.1:7203,127.0.0.1:7204,127.0.0.1:7205,127.0.0.1:7206"
}

// TestRedisClusterFailover: the master serving the showtime's slot is killed (SIGKILL);
// its replica is promoted; the killed node is started again and rejoins as a replica.
func TestRedisClusterFailover(t *testing.T) {
	selected(t)
	nodes := failoverNodes()
	probe := redis.NewClient(&redis.Options{Addr: strings.Split(nodes, ",")[0]})
	info, err := probe.ClusterInfo(context.Background()).Result()
	probe.Close()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		msg := fmt.Sprintf("the failover cluster (%s) is not up: run bash scripts/redis-cluster.sh failover (err %v)", nodes, err)
		if Long() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var killedAt, promotedAt, restartAt time.Time
	var killed string
	plan := DefaultPlan(20 * time.Second)
	plan.Fault = max(plan.Fault, 9*time.Second) // the promotion alone takes 3–4 s
	Run(t, Scenario{Order: 7, Name: "redis-cluster-failover", Plan: plan,
		Opts:  Options{RedisCluster: nodes},
		Fault: "Redis Cluster (3 masters + 3 replicas): the master of the showtime's slot killed (SIGKILL), its replica promoted; the node restarted at the end (rejoins as a replica)",
		Promise: "holds resume after the failover; seats held before it are still held or correctly released; " +
			"the reconciler repairs what the failover lost",
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			cc, ok := e.Checker.Redis.(*redis.ClusterClient)
			if !ok {
				return fmt.Errorf("the instances are not on a cluster")
			}
			master, err := cc.MasterForKey(ctx, e.Checker.Keys.Seats(e.Show.ID))
			if err != nil {
				return err
			}
			killed = master.Options().Addr
			pid, err := redisPID(ctx, master)
			if err != nil {
				return err
			}
			killedAt = time.Now()
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				return fmt.Errorf("kill %s (pid %d): %w", killed, pid, err)
			}
			e.Applied()
			t.Logf("killed master %s (pid %d)", killed, pid)
			if promotedAt, err = waitPromotion(ctx, nodes, killed, d+30*time.Second); err != nil {
				return err
			}
			t.Logf("replica promoted after %s", promotedAt.Sub(killedAt).Round(time.Millisecond))
			sleep(ctx, time.Until(killedAt.Add(d)))
			restartAt = time.Now()
			out, err := exec.CommandContext(ctx, "bash", "../../../scripts/redis-cluster.sh", "failover").CombinedOutput()
			if err != nil {
				return fmt.Errorf("restart the killed node: %v\n%s", err, out)
			}
			return nil
		},
		Extra: func(e *Env, w *Workload, ws []*Watcher, res *Result) {
			if promotedAt.IsZero() {
				res.violate("no replica was promoted")
				return
			}
			res.Note("killed master %s; replica promoted %.1f s after the kill", killed, promotedAt.Sub(killedAt).Seconds())
			samples, _, _ := w.Rec.Samples()
			var first time.Time
			for _, s := range samples {
				if s.Op == OpHold && s.Code == CodeOK && s.Start.After(killedAt) && (first.IsZero() || s.Start.Before(first)) {
					first = s.Start.Add(s.Latency)
				}
			}
			if first.IsZero() || !first.Before(restartAt) {
				res.violate("no hold succeeded between the promotion and the old master's return")
				return
			}
			res.Note("first successful hold %.1f s after the kill (%.1f s after the promotion; the old master returned %.1f s after the kill)",
				first.Sub(killedAt).Seconds(), first.Sub(promotedAt).Seconds(), restartAt.Sub(killedAt).Seconds())
		}})
}

// redisPID is the process id of a Redis server.
func redisPID(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("no process_id in INFO server")
}

// waitPromotion waits until the surviving nodes report the killed one failed and the
// cluster ok with three masters.
func waitPromotion(ctx context.Context, nodes, killed string, within time.Duration) (time.Time, error) {
	var other string
	for _, n := range strings.Split(nodes, ",") {
		if n != killed {
			other = n
			break
		}
	}
	c := redis.NewClient(&redis.Options{Addr: other})
	defer c.Close()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		info, err1 := c.ClusterInfo(ctx).Result()
		list, err2 := c.ClusterNodes(ctx).Result()
		if err1 == nil && err2 == nil && strings.Contains(info, "cluster_state:ok") {
			masters, gone := 0, false
			for _, line := range strings.Split(list, "\n") {
				f := strings.Fields(line)
				if len(f) < 3 {
					continue
				}
				flags := strings.Split(f[2], ",")
				switch {
				case strings.HasPrefix(f[1], killed+"@"):
					gone = slices.Contains(flags, "fail")
				case slices.Contains(flags, "master") && !slices.Contains(flags, "fail") && !slices.Contains(flags, "fail?"):
					masters++
				}
			}
			if gone && masters == 3 {
				return time.Now(), nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("no replica took over from %s within %s", killed, within)
}
