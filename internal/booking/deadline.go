package booking

import (
	"context"
	"time"
)

// detach is ctx without its cancellation but with its deadline: work that must finish
// whatever the client does (a hold applied in Redis must reach MySQL or be released; a
// committed payment's seats must be confirmed) still ends by the request's deadline, so a
// store that stops answering cannot hold the request past it.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}

// cleanupTimeout bounds the clean-up after a failed step (releasing seats just held),
// which runs even when the request's deadline has passed.
const cleanupTimeout = 3 * time.Second

func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
