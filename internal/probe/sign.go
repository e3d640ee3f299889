package probe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Signing is how the probe signs the deliveries it sends to webhook and
// callback receivers, which check a signature before the idempotency
// layer (docs/webhooks.md): a scheme of [Schemes] and its secret. The zero
// value signs nothing.
type Signing struct {
	Scheme string // one of Schemes; "" with a secret is StandardWebhooks
	Secret string
}

// The signing schemes, as docs/webhooks.md names them.
const (
	// StandardWebhooks: HMAC-SHA256 under the secret (whsec_ and the
	// key in base64) over "id.timestamp.body", sent as webhook-id,
	// webhook-timestamp (Unix seconds) and webhook-signature "v1,<base64>".
	StandardWebhooks = "standard-webhooks"
	// Stripe: HMAC-SHA256 under the secret as it is over "timestamp.body",
	// sent as Stripe-Signature "t=<timestamp>,v1=<hex>".
	Stripe = "stripe"
	// GitHub: HMAC-SHA256 under the secret as it is over the body, sent as
	// X-Hub-Signature-256 "sha256=<hex>".
	GitHub = "github"
)

// Schemes are the signing schemes the probe knows.
var Schemes = []string{StandardWebhooks, Stripe, GitHub}

// on reports whether s signs anything.
func (s Signing) on() bool { return s.Secret != "" }

// check returns the problem of s, nil when the probe can sign with it.
func (s Signing) check() error {
	if !s.on() {
		if s.Scheme != "" {
			return fmt.Errorf("-sign %s: give the secret too, with -sign-secret", s.Scheme)
		}
		return nil
	}
	switch s.scheme() {
	case StandardWebhooks:
		if _, err := standardKey(s.Secret); err != nil {
			return fmt.Errorf("-sign-secret: a Standard Webhooks secret is whsec_ and the key in base64, as the provider shows it: %v", err)
		}
	case Stripe, GitHub:
	default:
		return fmt.Errorf("-sign %q: want one of %s", s.Scheme, strings.Join(Schemes, ", "))
	}
	return nil
}

func (s Signing) scheme() string {
	if s.Scheme == "" {
		return StandardWebhooks
	}
	return s.Scheme
}

// sign adds to h the signature of a delivery of body made at now. For
// Standard Webhooks the signature covers h's webhook-id (the probe's key
// where the webhook declares it there); a delivery without one gets a
// fresh id when idHeader, the header that carries the operation's key, is
// another, and is signed over an empty id when the probe leaves the key
// out on purpose (the missing-key check).
func (s Signing) sign(h http.Header, idHeader string, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	switch s.scheme() {
	case StandardWebhooks:
		key, _ := standardKey(s.Secret) // checked by check
		id := h.Get("webhook-id")
		if id == "" && !strings.EqualFold(idHeader, "webhook-id") {
			id = freshKey()
			h.Set("webhook-id", id)
		}
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac(key, id+"."+ts+".", body)))
	case Stripe:
		h.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(mac([]byte(s.Secret), ts+".", body)))
	case GitHub:
		h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac([]byte(s.Secret), "", body)))
	}
}

// standardKey is the HMAC key of a Standard Webhooks secret.
func standardKey(secret string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
}

// mac is HMAC-SHA256 under key over prefix and body.
func mac(key []byte, prefix string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(prefix))
	m.Write(body)
	return m.Sum(nil)
}

// refused reports whether a is a refusal of the request itself (401 or
// 403): a credential or a signature the target did not accept, before
// anything ran.
func (a answer) refused() bool {
	return a.err == nil && slices.Contains([]int{http.StatusUnauthorized, http.StatusForbidden}, a.status)
}
