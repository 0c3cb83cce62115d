package bench

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// storeCPU is the CPU time a probe's turns took of the bench process (its clients and an
// in-process server), of MySQL's server and of Redis' server: where an operation's cost
// goes, per operation, beside its rate.
type storeCPU struct{ bench, mysql, redis float64 }

// mysqlPID is the process id of the local MySQL or MariaDB server ("" when none runs
// here: its column then reads 0).
func mysqlPID() string {
	for _, name := range []string{"mariadbd", "mysqld"} {
		if out, err := exec.Command("pgrep", "-o", "-x", name).Output(); err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

// withStoreCPU adds p's turns' CPU time to into.
func withStoreCPU(ctx context.Context, b *benchEnv, p *probe, into *storeCPU) *probe {
	pid := mysqlPID()
	p.turn = func() func() {
		bench, mysql, redis := benchCPUSeconds(), cpuSecondsOf(pid), redisCPUSeconds(ctx, b)
		return func() {
			into.bench += benchCPUSeconds() - bench
			into.mysql += cpuSecondsOf(pid) - mysql
			into.redis += redisCPUSeconds(ctx, b) - redis
		}
	}
	return p
}

// perOp is the cell of n operations' CPU: µs each of the bench process, MySQL and Redis.
func (c storeCPU) perOp(n int) string {
	if n == 0 {
		return ""
	}
	us := func(s float64) float64 { return s / float64(n) * 1e6 }
	return fmt.Sprintf("%.0f / %.0f / %.0f", us(c.bench), us(c.mysql), us(c.redis))
}
