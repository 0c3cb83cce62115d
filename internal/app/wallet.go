package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"seatflow/internal/auth"
	"seatflow/internal/wallet"
)

// The demo pass type and team of embedded mode's demo passes.
const (
	demoPassTypeID = "pass.dev.seatflow.demo"
	demoTeamID     = "SEATFLOWDEMO"
)

// wireWallet builds the Apple Wallet passes over the tickets: signed with the configured
// certificate (SEATFLOW_WALLET_APPLE_*), or in embedded mode with none configured with a
// demo CA kept beside the SQLite file, said in capitals in the log. Outside embedded mode with
// none configured the passes are off (WALLET_UNAVAILABLE).
func (a *App) wireWallet() error {
	if a.Tickets == nil {
		return nil
	}
	cfg := a.Config.WalletApple
	secret := []byte(a.Config.JWTSecret)
	a.Wallet = &wallet.Service{Tickets: a.Tickets, Catalog: a.Catalog, Now: a.Now,
		LinkKey: auth.DeriveKey(secret, "wallet-link"),
		Identity: wallet.Identity{PassTypeID: cfg.PassTypeID, TeamID: cfg.TeamID,
			WebServiceURL: a.Config.PublicURL + "/passkit", TokenKey: auth.DeriveKey(secret, "wallet-pass")}}
	files := wallet.Files{Cert: cfg.Cert, Key: cfg.Key, WWDR: cfg.WWDR}
	switch {
	case len(cfg.missing()) == 0:
	case a.Config.Embedded():
		var err error
		if files, err = a.demoWalletFiles(); err != nil {
			return err
		}
		a.Wallet.PassTypeID, a.Wallet.TeamID = demoPassTypeID, demoTeamID
		// At INFO, loud in words: embedded mode is for demos, where this is expected, and its
		// start logs no warning (server/start_test.go).
		a.Log.Info("WALLET PASSES ARE DEMO PASSES: signed by a self-signed demo CA (" + wallet.DemoCAName + ", " + files.WWDR +
			"), Apple devices will not accept them; set SEATFLOW_WALLET_APPLE_* (docs/TICKETS.md)")
	default:
		return nil // no Apple passes
	}
	signer, err := wallet.LoadSigner(files)
	if err != nil {
		return err
	}
	a.Wallet.Signer = signer
	return nil
}

// demoWalletFiles are embedded mode's demo CA and pass certificate, made at first start
// and kept beside the SQLite file (in a directory removed at Close for an in-memory one).
func (a *App) demoWalletFiles() (wallet.Files, error) {
	base := sqliteFile(a.Config.SQLitePath)
	if base == "" {
		dir, err := os.MkdirTemp("", "seatflow-wallet-")
		if err != nil {
			return wallet.Files{}, err
		}
		a.closers = append(a.closers, func() { os.RemoveAll(dir) })
		base = dir + "/seatflow"
	}
	f := wallet.Files{Cert: base + ".wallet-demo-pass.pem", Key: base + ".wallet-demo-pass-key.pem", WWDR: base + ".wallet-demo-ca.pem"}
	if _, err := os.Stat(f.Key); err == nil {
		return f, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return wallet.Files{}, fmt.Errorf("read the demo wallet certificate: %w", err)
	}
	if err := wallet.DemoFiles(f, demoPassTypeID, demoTeamID); err != nil {
		return wallet.Files{}, fmt.Errorf("make the demo wallet certificate beside %s: %w", base, err)
	}
	return f, nil
}
