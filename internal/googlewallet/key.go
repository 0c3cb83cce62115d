package googlewallet

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/mail"
	"os"
)

// Account is a Google Cloud service account: the email its links are issued by (iss) and
// the RSA key that signs them.
type Account struct {
	Email string
	Key   *rsa.PrivateKey
}

// keyFile is the JSON key file Google issues for a service account (only the fields
// read here).
type keyFile struct {
	Type        string `json:"type"`
	ClientEmail string `json:"client_email"`
	PrivateKey  string `json:"private_key"`
}

// LoadAccount reads a service account's JSON key file, as Google issues it:
// {"type":"service_account","client_email":...,"private_key":"-----BEGIN PRIVATE KEY-----..."}.
func LoadAccount(path string) (*Account, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the service account's key file: %w", err)
	}
	return ParseAccount(b)
}

// ParseAccount reads the content of a service account's JSON key file.
func ParseAccount(b []byte) (*Account, error) {
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, errors.New("not a service account's JSON key file (want the file Google issues, with client_email and private_key)")
	}
	if f.Type != "service_account" {
		return nil, fmt.Errorf(`the key file's type is %q, want "service_account"`, f.Type)
	}
	if _, err := mail.ParseAddress(f.ClientEmail); err != nil || f.ClientEmail == "" {
		return nil, errors.New("the key file's client_email is no email address")
	}
	block, _ := pem.Decode([]byte(f.PrivateKey))
	if block == nil {
		return nil, errors.New("the key file's private_key is no PEM block")
	}
	key, err := parseRSAKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	return &Account{Email: f.ClientEmail, Key: key}, nil
}

// parseRSAKey reads a PKCS#8 RSA private key (Google's format), or PKCS#1.
func parseRSAKey(der []byte) (*rsa.PrivateKey, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, errors.New("the key file's private_key is no RSA key (RS256 needs one)")
		}
		return rk, nil
	}
	if rk, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return rk, nil
	}
	return nil, errors.New("the key file's private_key is no PKCS#8 RSA private key")
}

// KeyFile is account's key file in Google's format: what LoadAccount and ParseAccount read.
func KeyFile(a *Account) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(a.Key)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(keyFile{Type: "service_account", ClientEmail: a.Email,
		PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}, "", "  ")
}

// Demo values of embedded mode: Google accepts no link they sign.
const (
	DemoIssuerID = "3388000000000000000"
	DemoEmail    = "seatflow-demo@seatflow-demo.iam.gserviceaccount.com"
)

// NewDemoAccount makes a demo service account with a fresh 2048-bit RSA key.
func NewDemoAccount() (*Account, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Account{Email: DemoEmail, Key: key}, nil
}

// DemoAccount is embedded mode's demo service account, kept in the key file at path
// (made on first start, readable by its owner only) so links survive a restart; an empty
// path gets a fresh account that is kept nowhere.
func DemoAccount(path string) (*Account, error) {
	if path == "" {
		return NewDemoAccount()
	}
	if a, err := LoadAccount(path); err == nil {
		return a, nil
	} else if _, statErr := os.Stat(path); !errors.Is(statErr, fs.ErrNotExist) {
		return nil, fmt.Errorf("the demo Google Wallet key %s: %w", path, err)
	}
	a, err := NewDemoAccount()
	if err != nil {
		return nil, err
	}
	b, err := KeyFile(a)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first
		return LoadAccount(path)
	} else if err != nil {
		return nil, fmt.Errorf("keep the demo Google Wallet key at %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return a, nil
}
