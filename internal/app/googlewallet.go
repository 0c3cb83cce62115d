package app

import (
	"fmt"
	"net/url"

	"seatflow/internal/googlewallet"
)

// wireGoogleWallet makes the issuer of "Save to Google Wallet" links from
// SEATFLOW_WALLET_GOOGLE_KEY and SEATFLOW_WALLET_GOOGLE_ISSUER_ID; without them it stays
// nil (the links are WALLET_UNAVAILABLE), except in embedded mode, which signs with a demo
// key kept beside its SQLite file and says loudly that Google refuses such links.
func (a *App) wireGoogleWallet() error {
	if a.Tickets == nil { // a command that signs no ticket code makes no link either
		return nil
	}
	cfg := a.Config
	// The links' origin is the site's: SEATFLOW_PUBLIC_URL without a path (checked a URL).
	origin := cfg.PublicURL
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Host != "" {
		origin = u.Scheme + "://" + u.Host
	}
	issuer := &googlewallet.Issuer{IssuerID: cfg.WalletGoogleIssuerID, Origin: origin, Now: a.Now}
	switch {
	case cfg.WalletGoogleKey != "":
		account, err := googlewallet.LoadAccount(cfg.WalletGoogleKey)
		if err != nil {
			return fmt.Errorf("SEATFLOW_WALLET_GOOGLE_KEY: %w", err)
		}
		issuer.Account = account
	case cfg.Embedded():
		path := sqliteFile(cfg.SQLitePath)
		if path != "" {
			path += ".google-wallet-key.json"
		}
		account, err := googlewallet.DemoAccount(path)
		if err != nil {
			return err
		}
		issuer.Account, issuer.IssuerID = account, googlewallet.DemoIssuerID
		// At INFO, loud in words: embedded mode is for demos, where this is expected, and its
		// start logs no warning (server/start_test.go).
		a.Log.Info("GOOGLE WALLET LINKS ARE DEMOS: embedded mode signs \"Save to Google Wallet\" links with a demo key "+
			"and issuer id that Google does not know, so Google will not accept them. Set SEATFLOW_WALLET_GOOGLE_KEY and "+
			"SEATFLOW_WALLET_GOOGLE_ISSUER_ID for real links (docs/TICKETS.md \"Wallets\")",
			"key", path, "issuer_id", issuer.IssuerID)
	default:
		return nil
	}
	a.GoogleWallet = issuer
	return nil
}
