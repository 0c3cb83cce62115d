package rdb

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"seatflow"
)

// redisError is an error as Redis answers it.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

var _ redis.Error = redisError("")

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"ClusterDown", redisError("CLUSTERDOWN The cluster is down"), seatflow.EUNAVAILABLE},
		{"TryAgain", redisError("TRYAGAIN Multiple keys request during rehashing of slot"), seatflow.EUNAVAILABLE},
		{"ReadOnlyReplica", redisError("READONLY You can't write against a read only replica."), seatflow.EUNAVAILABLE},
		{"MovedPastTheRedirectLimit", redisError("MOVED 3077 127.0.0.1:7201"), seatflow.EUNAVAILABLE},
		{"Loading", redisError("LOADING Redis is loading the dataset in memory"), seatflow.EUNAVAILABLE},
		{"ScriptBugStaysInternal", redisError("ERR user_script:1: Script attempted to access nonexistent global variable"), seatflow.EINTERNAL},
		{"Deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), seatflow.EUNAVAILABLE},
		{"CancelledByTheCaller", context.Canceled, seatflow.EINTERNAL},
		{"ConnectionRefused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), seatflow.EUNAVAILABLE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := seatflow.ErrorCode(Classify("op", tc.err)); got != tc.want {
				t.Fatalf("code = %q, want %q", got, tc.want)
			}
		})
	}
}
