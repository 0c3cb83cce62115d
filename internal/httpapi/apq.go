package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/redis/go-redis/v9"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
)

const apqTTL = 24 * time.Hour

// persistedQueries serves automatic persisted queries (a client sends a document's
// sha256 instead of the document; it registers the document by sending both), with what
// keeps them from being abused: a document is kept only once it parsed and passed
// validation and every limit, and only up to MaxBytes; documents are kept in Redis for a
// day, shared by the instances. With Only set, nothing is registered: only the documents
// of the Manifest (a front end's build lists them) run at all.
type persistedQueries struct {
	Redis    redis.UniversalClient
	Prefix   string
	MaxBytes int
	Only     bool
	Manifest map[string]string // sha256 → document
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = persistedQueries{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = keepPersisted{}

// ExtensionName names the extension for gqlgen.
func (persistedQueries) ExtensionName() string { return "PersistedQueries" }

// Validate accepts any schema.
func (persistedQueries) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters fills in the document of a hash, or notes a registration.
func (p persistedQueries) MutateOperationParameters(ctx context.Context, raw *graphql.RawParams) *gqlerror.Error {
	hash, present := persistedHash(raw.Extensions)
	switch {
	case !present && p.Only:
		return &gqlerror.Error{Message: "only registered (persisted) documents run on this server",
			Extensions: map[string]any{"code": seatflow.EPERSISTEDNOTALLOWED}}
	case !present:
		return nil
	case hash == "":
		return &gqlerror.Error{Message: "extensions.persistedQuery needs version 1 and a sha256Hash",
			Extensions: map[string]any{"code": seatflow.EBADREQUEST}}
	}
	if raw.Query == "" {
		if q, ok := p.Manifest[hash]; ok {
			raw.Query = q
			return nil
		}
		if !p.Only {
			if q, err := p.Redis.Get(ctx, p.Prefix+hash).Result(); err == nil {
				raw.Query = q
				return nil
			}
		}
		return &gqlerror.Error{Message: "PersistedQueryNotFound", Extensions: map[string]any{"code": seatflow.EPERSISTEDNOTFOUND}}
	}
	sum := sha256.Sum256([]byte(raw.Query))
	if hex.EncodeToString(sum[:]) != hash {
		return &gqlerror.Error{Message: "the document's sha256 is not extensions.persistedQuery.sha256Hash",
			Extensions: map[string]any{"code": seatflow.EBADREQUEST}}
	}
	if p.Only {
		if p.Manifest[hash] != raw.Query {
			return &gqlerror.Error{Message: "only registered (persisted) documents run on this server",
				Extensions: map[string]any{"code": seatflow.EPERSISTEDNOTALLOWED}}
		}
		return nil
	}
	if st := stateOf(ctx); st != nil && len(raw.Query) <= p.MaxBytes {
		st.register = hash // kept once it passed every check (keepPersisted)
	}
	return nil
}

// keepPersisted keeps a document registered by persistedQueries once it parsed, was
// validated and passed the limits of every extension added before this one (it is added
// after them).
type keepPersisted struct{ persistedQueries }

// ExtensionName names the extension for gqlgen.
func (keepPersisted) ExtensionName() string { return "KeepPersisted" }

// MutateOperationContext keeps the registered document. Its hash is checked again here:
// the operations of one websocket share their request's state, and a document must never
// be kept under another's hash.
func (k keepPersisted) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	st := stateOf(ctx)
	if st == nil || st.register == "" {
		return nil
	}
	if sum := sha256.Sum256([]byte(oc.RawQuery)); hex.EncodeToString(sum[:]) == st.register {
		k.Redis.Set(ctx, k.Prefix+st.register, oc.RawQuery, apqTTL)
	}
	return nil
}

// persistedHash reads extensions.persistedQuery: whether it is there, and its hash when it
// is well-formed (version 1, a hex sha256).
func persistedHash(ext map[string]any) (string, bool) {
	pq, ok := ext["persistedQuery"].(map[string]any)
	if !ok {
		return "", ext["persistedQuery"] != nil
	}
	hash, _ := pq["sha256Hash"].(string)
	version := fmt.Sprint(pq["version"])
	if version != "1" || len(hash) != 64 || strings.Trim(strings.ToLower(hash), "0123456789abcdef") != "" {
		return "", true
	}
	return strings.ToLower(hash), true
}

// LoadManifest reads a persisted-query manifest: Apollo's format
// ({"operations": [{"id": sha256, "body": document}, ...]}) or a plain object of
// sha256 → document. Every entry's hash is checked.
func LoadManifest(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var apollo struct {
		Operations []struct{ ID, Body string } `json:"operations"`
	}
	out := map[string]string{}
	if json.Unmarshal(raw, &apollo) == nil && len(apollo.Operations) > 0 {
		for _, op := range apollo.Operations {
			out[strings.ToLower(op.ID)] = op.Body
		}
	} else if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("persisted-query manifest %s: not Apollo's format nor an object of sha256 → document", path)
	}
	for h, q := range out {
		sum := sha256.Sum256([]byte(q))
		if hex.EncodeToString(sum[:]) != h {
			return nil, fmt.Errorf("persisted-query manifest %s: %.16s… is not the sha256 of its document", path, h)
		}
	}
	return out, nil
}
