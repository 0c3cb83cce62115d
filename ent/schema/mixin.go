// Package schema holds SeatFlow's ent schema: the MySQL/SQLite tables of docs/DESIGN.md
// "Data".
package schema

import "entgo.io/ent/dialect"

// datetime6 makes MySQL store a time as datetime(6): ent's default (timestamp) stops at
// 2038 and drops sub-second precision.
var datetime6 = map[string]string{dialect.MySQL: "datetime(6)"}
