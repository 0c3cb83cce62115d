// Package testenv gives each test its own real MySQL database and its own Redis key
// prefix, so test packages run in parallel against the same servers without seeing each
// other. It never mocks a store: tests talk to MariaDB/MySQL and Redis.
//
// SEATFLOW_TEST_MYSQL_DSN (default root@tcp(127.0.0.1:3306)/) and SEATFLOW_TEST_REDIS_URL
// (default redis://127.0.0.1:6379/0) name the servers; SEATFLOW_TEST_REDIS_CLUSTER
// (host:port,...) runs the Redis side on a Redis Cluster instead; SEATFLOW_TEST_STRIPE_URL
// (default http://127.0.0.1:12111) names the stripe-mock of the payment tests.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/redis/go-redis/v9"

	"seatflow/ent"
	"seatflow/internal/database"
	"seatflow/internal/keys"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// MySQLServerDSN is the DSN of the test server without a database name.
func MySQLServerDSN() string { return env("SEATFLOW_TEST_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/") }

// RandomName returns prefix followed by 12 random hex characters.
func RandomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// DB is a migrated test database of its own.
type DB struct {
	Client *ent.Client
	SQL    *sql.DB
	DSN    string
	// Queries counts the SQL statements sent through Client since the last Reset.
	Queries *QueryCounter
}

// QueryCounter counts statements sent through a debug driver.
type QueryCounter struct{ n atomic.Int64 }

// Count returns the statements counted so far.
func (q *QueryCounter) Count() int64 { return q.n.Load() }

// Reset sets the count to zero.
func (q *QueryCounter) Reset() { q.n.Store(0) }

// MySQL creates a fresh database on the test MySQL server, migrates it and drops it when
// the test ends.
func MySQL(tb testing.TB) *DB {
	tb.Helper()
	name := RandomName("sftest_")
	admin, err := sql.Open("mysql", MySQLServerDSN())
	if err != nil {
		tb.Fatalf("open mysql: %v", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		tb.Fatalf("create test database (is MySQL running? `make services`): %v", err)
	}
	tb.Cleanup(func() {
		admin, err := sql.Open("mysql", MySQLServerDSN())
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name)
	})
	dsn := dsnWithDB(MySQLServerDSN(), name)
	counter := &QueryCounter{}
	client, sqlDB, err := database.OpenMySQL(dsn, ent.Debug(), ent.Log(func(args ...any) {
		counter.n.Add(1)
		if os.Getenv("SEATFLOW_TEST_LOG_SQL") != "" {
			fmt.Fprintln(os.Stderr, args...)
		}
	}))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	if err := database.Migrate(ctx, client, sqlDB); err != nil {
		tb.Fatal(err)
	}
	counter.Reset()
	return &DB{Client: client, SQL: sqlDB, DSN: dsn, Queries: counter}
}

// Dialect is the dialect the test databases use.
const Dialect = dialect.MySQL

func dsnWithDB(server, db string) string {
	i := strings.Index(server, "/")
	if i < 0 {
		return server + "/" + db
	}
	rest := server[i+1:]
	params := ""
	if j := strings.Index(rest, "?"); j >= 0 {
		params = rest[j:]
	}
	return server[:i+1] + db + params
}

// Redis is a Redis client plus a key prefix no other test uses.
type Redis struct {
	Client redis.UniversalClient
	Keys   keys.Keys
	URL    string
}

// NewRedisClient opens a client on the test Redis (or Redis Cluster).
func NewRedisClient(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	var c redis.UniversalClient
	if addrs := os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER"); addrs != "" {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	} else {
		opt, err := redis.ParseURL(RedisURL())
		if err != nil {
			tb.Fatal(err)
		}
		c = redis.NewClient(opt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("ping redis (is it running? `make services`): %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// RedisURL is the URL of the test Redis server.
func RedisURL() string { return env("SEATFLOW_TEST_REDIS_URL", "redis://127.0.0.1:6379/0") }

// NewRedis returns a client and a fresh key prefix; every key under the prefix is
// deleted when the test ends.
func NewRedis(tb testing.TB) *Redis {
	tb.Helper()
	c := NewRedisClient(tb)
	k := keys.New(RandomName("sft"))
	tb.Cleanup(func() { DeletePrefix(c, k.Prefix) })
	return &Redis{Client: c, Keys: k, URL: RedisURL()}
}

// DeletePrefix deletes every key that starts with prefix (on every master of a cluster).
func DeletePrefix(c redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	del := func(ctx context.Context, n redis.UniversalClient) error {
		iter := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			n.Del(ctx, iter.Val())
		}
		return iter.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return del(ctx, n) })
		return
	}
	if err := del(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: clean redis:", err)
	}
}

// KeysOutside lists the keys in Redis that name prefix but do not start with it: keys a
// library or a hand-built name put outside the deployment's prefix (two deployments
// sharing a Redis would collide on them, and DeletePrefix cannot find them).
func KeysOutside(tb testing.TB, c redis.UniversalClient, prefix string) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	scan := func(ctx context.Context, n redis.UniversalClient) error {
		iter := n.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if !strings.HasPrefix(iter.Val(), prefix+":") {
				out = append(out, iter.Val())
			}
		}
		return iter.Err()
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	} else {
		err = scan(ctx, c)
	}
	if err != nil {
		tb.Fatalf("scan redis: %v", err)
	}
	return out
}

// CreateDatabase creates an empty database on the test MySQL server, outside any test
// (the benchmarks use it); DropDatabase removes it and DatabaseDSN names it.
func CreateDatabase(ctx context.Context, name string) error {
	admin, err := sql.Open("mysql", MySQLServerDSN())
	if err != nil {
		return err
	}
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	return err
}

// DropDatabase drops a database CreateDatabase made.
func DropDatabase(ctx context.Context, name string) error {
	admin, err := sql.Open("mysql", MySQLServerDSN())
	if err != nil {
		return err
	}
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	return err
}

// DatabaseDSN is the DSN of database name on the test MySQL server.
func DatabaseDSN(name string) string { return dsnWithDB(MySQLServerDSN(), name) }

// DatabaseDSNOn is the DSN of database name on the MySQL server serverDSN (a DSN without
// a database, as MySQLServerDSN).
func DatabaseDSNOn(serverDSN, name string) string { return dsnWithDB(serverDSN, name) }
