package app

import (
	"context"
	"fmt"
	"time"

	"seatflow/internal/auth"
	"seatflow/internal/passkit"
)

// passPushEvery is how often each instance looks for passes changed since their devices'
// last push.
const passPushEvery = 5 * time.Second

// wirePassKit builds the PassKit web service of the instance's Apple Wallet passes (none
// without them), and its pusher: APNs when SEATFLOW_WALLET_APNS says so, else the
// recorder, which logs each update it does not push (and a warning at start when there
// are real passes to update).
func (a *App) wirePassKit() error {
	if !a.Wallet.Enabled() {
		if m := a.Config.WalletAPNs.Mode; m != "off" && m != "" {
			return fmt.Errorf("SEATFLOW_WALLET_APNS=%s needs the Apple Wallet pass settings: the pushes' topic is the pass type id", m)
		}
		return nil
	}
	passTypeID, passes := a.Wallet.PassTypeID, a.Wallet
	var pusher passkit.Pusher
	apns := a.Config.WalletAPNs
	if apns.Mode == "off" || apns.Mode == "" {
		pusher = &passkit.Recorder{Log: a.Log}
		if !a.Config.Embedded() && passTypeID != "" { // real passes whose updates stay unpushed
			a.Log.Warn("WALLET PASS UPDATES ARE NOT PUSHED: SEATFLOW_WALLET_APNS=off; phones learn of a changed pass " +
				"(a rescheduled showtime, a refund) only when they look for themselves. Set it to production with an APNs key")
		}
	} else {
		if passTypeID == "" {
			return fmt.Errorf("SEATFLOW_WALLET_APNS=%s needs the Apple Wallet pass settings: the pushes' topic is the pass type id", apns.Mode)
		}
		p, err := passkit.NewAPNs(passkit.APNsConfig{Production: apns.Mode == "production", KeyFile: apns.Key,
			KeyID: apns.KeyID, TeamID: apns.TeamID, CertFile: apns.Cert, Topic: passTypeID})
		if err != nil {
			return fmt.Errorf("SEATFLOW_WALLET_APNS: %w", err)
		}
		pusher = p
	}
	a.PassKit = passkit.New(a.DB, passes, pusher, passkit.Config{PassTypeID: passTypeID,
		Key: auth.DeriveKey([]byte(a.Config.JWTSecret), "wallet-pass"), Now: a.Now, Log: a.Log})
	return nil
}

// runPassPushes runs the push loop of the Wallet passes until ctx ends.
func (a *App) runPassPushes(ctx context.Context) {
	if a.PassKit != nil {
		a.PassKit.Run(ctx, passPushEvery)
	}
}
