package passkit

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/certificate"
	"github.com/sideshow/apns2/token"
)

// APNsConfig is how the APNs client authenticates: a token key (KeyFile, a .p8 file,
// with KeyID and TeamID), or else a certificate (CertFile: a PEM file holding the
// certificate and its key, such as the pass type's).
type APNsConfig struct {
	// Production sends through APNs' production servers, else its development ones.
	Production             bool
	KeyFile, KeyID, TeamID string
	CertFile               string
	// Topic is the passes' pass type identifier.
	Topic string
	// Host replaces the APNs server (tests).
	Host string
}

// APNs is the Pusher that sends through Apple's push service (HTTP/2).
type APNs struct {
	client *apns2.Client
	topic  string
}

// NewAPNs is an APNs client from cfg.
func NewAPNs(cfg APNsConfig) (*APNs, error) {
	var c *apns2.Client
	switch {
	case cfg.KeyFile != "":
		key, err := token.AuthKeyFromFile(cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("read the APNs key: %w", err)
		}
		c = apns2.NewTokenClient(&token.Token{AuthKey: key, KeyID: cfg.KeyID, TeamID: cfg.TeamID})
	case cfg.CertFile != "":
		cert, err := certificate.FromPemFile(cfg.CertFile, "")
		if err != nil {
			return nil, fmt.Errorf("read the APNs certificate: %w", err)
		}
		c = apns2.NewClient(cert)
	default:
		return nil, fmt.Errorf("APNs needs a key or a certificate")
	}
	switch {
	case cfg.Host != "":
		c.Host = cfg.Host
	case cfg.Production:
		c = c.Production()
	default:
		c = c.Development()
	}
	return &APNs{client: c, topic: cfg.Topic}, nil
}

// Push sends the empty push of a pass update to pushToken.
func (a *APNs) Push(ctx context.Context, pushToken string) error {
	res, err := a.client.PushWithContext(ctx, &apns2.Notification{DeviceToken: pushToken, Topic: a.topic,
		Payload: []byte(`{}`)})
	if err != nil {
		return fmt.Errorf("apns: %w", err)
	}
	switch {
	case res.Sent():
		return nil
	case res.StatusCode == http.StatusGone || res.Reason == apns2.ReasonBadDeviceToken || res.Reason == apns2.ReasonUnregistered:
		return ErrUnregistered
	}
	return fmt.Errorf("apns: %d %s", res.StatusCode, res.Reason)
}

// CheckAPNsKey says what is wrong with the APNs token key file at path (nil: nothing).
func CheckAPNsKey(path string) error {
	_, err := token.AuthKeyFromFile(path)
	return err
}

// CheckAPNsCert says what is wrong with the APNs certificate file at path (nil: nothing).
func CheckAPNsCert(path string) error {
	_, err := certificate.FromPemFile(path, "")
	return err
}
