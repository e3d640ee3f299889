//docblocks:module runtime

// The context of docs/webhooks.md's fragments that use no generated
// package.
package docs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	idem "github.com/idemgen/idemgen/runtime"
)

var senderFromContext func(context.Context) string
