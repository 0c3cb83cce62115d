package queue

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/view.lua
	viewSrc string
	//go:embed lua/join.lua
	joinSrc string
	//go:embed lua/ticket.lua
	ticketSrc string
	//go:embed lua/leave.lua
	leaveSrc string
	//go:embed lua/spend.lua
	spendSrc string
	//go:embed lua/seen.lua
	seenSrc string
	//go:embed lua/positions.lua
	positionsSrc string
	//go:embed lua/admit.lua
	admitSrc string
	//go:embed lua/setup.lua
	setupSrc string
	//go:embed lua/close.lua
	closeSrc string
	//go:embed lua/remove.lua
	removeSrc string
	//go:embed lua/status.lua
	statusSrc string
)

// The scripts, each compiled once (Script.Run: EVALSHA, EVAL on NOSCRIPT); every queue
// operation is one of them. Each .lua file starts with its contract: KEYS, ARGV and the
// reply. lua/view.lua, the reply that shows a ticket, is put in front of the two that
// answer one.
var (
	joinScript      = redis.NewScript(viewSrc + joinSrc)   // lua/join.lua: a user's ticket, made when they have none
	ticketScript    = redis.NewScript(viewSrc + ticketSrc) // lua/ticket.lua: a user's ticket, its holder seen
	leaveScript     = redis.NewScript(leaveSrc)            // lua/leave.lua: a ticket taken out, its pass given back
	spendScript     = redis.NewScript(spendSrc)            // lua/spend.lua: a pass ended by its holder's order
	seenScript      = redis.NewScript(seenSrc)             // lua/seen.lua: subscribers marked seen
	positionsScript = redis.NewScript(positionsSrc)        // lua/positions.lua: where tickets are, at one instant
	admitScript     = redis.NewScript(admitSrc)            // lua/admit.lua: one admission tick, under the lease
	setupScript     = redis.NewScript(setupSrc)            // lua/setup.lua: a queue's state created or its settings updated
	closeScript     = redis.NewScript(closeSrc)            // lua/close.lua: CLOSED, its keys left to expire
	removeScript    = redis.NewScript(removeSrc)           // lua/remove.lua: a queue deleted before it opened
	statusScript    = redis.NewScript(statusSrc)           // lua/status.lua: a queue's settings and counts
)
