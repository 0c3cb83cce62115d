package wallet

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"

	"github.com/smallstep/pkcs7"
)

// Signer signs a pass's manifest: the pass-type certificate Apple issued for the pass type
// id, its private key, and Apple's WWDR intermediate that issued the certificate.
type Signer struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	WWDR *x509.Certificate
}

// Files are the PEM files of a signer, by the settings that name them.
type Files struct {
	Cert, Key, WWDR string
}

// SettingError is a signer file that does not load, with the setting that names it.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// The settings naming a signer's files.
const (
	SettingCert = "SEATFLOW_WALLET_APPLE_CERT"
	SettingKey  = "SEATFLOW_WALLET_APPLE_KEY"
	SettingWWDR = "SEATFLOW_WALLET_APPLE_WWDR"
)

// LoadSigner reads the three PEM files; a file that does not read or parse, a key that is
// not the certificate's, or a WWDR certificate that did not issue it is a *SettingError
// naming the setting to fix.
func LoadSigner(f Files) (*Signer, error) {
	cert, err := readCert(f.Cert)
	if err != nil {
		return nil, &SettingError{SettingCert, err}
	}
	wwdr, err := readCert(f.WWDR)
	if err != nil {
		return nil, &SettingError{SettingWWDR, err}
	}
	key, err := readKey(f.Key)
	if err != nil {
		return nil, &SettingError{SettingKey, err}
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, &SettingError{SettingKey, fmt.Errorf("the key in %s is not the private key of the certificate in %s (%s)", f.Key, f.Cert, SettingCert)}
	}
	if err := cert.CheckSignatureFrom(wwdr); err != nil {
		return nil, &SettingError{SettingWWDR, fmt.Errorf("the certificate in %s did not issue the pass certificate %q: %w", f.WWDR, cert.Subject.CommonName, err)}
	}
	return &Signer{Cert: cert, Key: key, WWDR: wwdr}, nil
}

// readCert reads the first certificate of a PEM file.
func readCert(path string) (*x509.Certificate, error) {
	block, err := readPEM(path, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cert, nil
}

// readKey reads an unencrypted private key, PKCS8 or PKCS1 (RSA) or SEC 1 (EC), as
// `openssl pkcs12 -nodes` exports Apple's .p12.
func readKey(path string) (crypto.Signer, error) {
	block, err := readPEM(path, "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	var key any
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: a %T cannot sign", path, key)
	}
	return s, nil
}

// readPEM returns the first block of path of one of types.
func readPEM(path string, types ...string) (*pem.Block, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for rest := b; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return nil, fmt.Errorf("%s holds no PEM block of type %q", path, types[0])
		}
		if _, encrypted := block.Headers["Proc-Type"]; encrypted {
			return nil, fmt.Errorf("%s: the key is encrypted; export it without a passphrase (openssl pkcs12 -nodes)", path)
		}
		for _, t := range types {
			if block.Type == t {
				return block, nil
			}
		}
	}
}

// Sign returns the detached PKCS7 signature (DER) of manifest: SHA-256, with the signing
// time among the signed attributes and the WWDR certificate beside the pass certificate,
// as Apple's devices check it.
func (s *Signer) Sign(manifest []byte) ([]byte, error) {
	sd, err := pkcs7.NewSignedData(manifest)
	if err != nil {
		return nil, err
	}
	sd.SetDigestAlgorithm(pkcs7.OIDDigestAlgorithmSHA256)
	if err := sd.AddSignerChain(s.Cert, s.Key, []*x509.Certificate{s.WWDR}, pkcs7.SignerInfoConfig{}); err != nil {
		return nil, fmt.Errorf("sign the manifest: %w", err)
	}
	sd.Detach()
	return sd.Finish()
}

// DemoCAName is the common name of the demo CA embedded mode makes in place of Apple's
// WWDR intermediate.
const DemoCAName = "SeatFlow demo WWDR"

// DemoFiles makes a demo signer's files: a self-signed CA named DemoCAName and a pass
// certificate for passTypeID and teamID it signs, written to f's paths (the key readable
// by its owner only). No Apple device accepts a pass it signs. They are valid for 20 years
// from now by the system clock, the one the signing time is read from.
func DemoFiles(f Files, passTypeID, teamID string) error {
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: DemoCAName, Organization: []string{"SeatFlow demo"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(20, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return err
	}
	passKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pass := &x509.Certificate{
		SerialNumber: serial(),
		Subject: pkix.Name{CommonName: "Pass Type ID: " + passTypeID, OrganizationalUnit: []string{teamID},
			Organization: []string{"SeatFlow demo"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(20, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	passDER, err := x509.CreateCertificate(rand.Reader, pass, ca, &passKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(passKey)
	if err != nil {
		return err
	}
	return errors.Join(
		writePEM(f.WWDR, "CERTIFICATE", caDER, 0o644),
		writePEM(f.Cert, "CERTIFICATE", passDER, 0o644),
		writePEM(f.Key, "PRIVATE KEY", keyDER, 0o600))
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

// serial is a random certificate serial number (RFC 5280: positive, at most 20 bytes).
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1))
}
