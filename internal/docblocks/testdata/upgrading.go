//docblocks:module runtime

// The context of docs/upgrading.md's fragments.
package docs

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/runtime/redisstore/previouslayout"
)

var (
	rdb       *redis.Client
	retention time.Duration
	prefix    string
)
