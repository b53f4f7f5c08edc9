package tripwire

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
)

// tokenPrefix starts every personal API token, so a leaked one is easy to
// recognise.
const tokenPrefix = "jtw_"

// A calendar feed token reads its owner's calendar feed and nothing else:
// a calendar app subscribes to a bare URL, where the token travels in the
// query string and lands in proxies' logs, so it must not be the personal
// token that arms and deletes tripwires. Its plaintext starts with
// feedTokenPrefix (each kind of token is looked up only after its own
// prefix is checked) and its ID with feedTokenIDPrefix, so that a list
// tells the two kinds apart; it is kept, moved on linking and revoked as
// a personal token is.
const (
	feedTokenPrefix   = "jcal_"
	feedTokenIDPrefix = "cal_"
	// FeedTokenLabel is the label of every calendar feed token.
	FeedTokenLabel = "calendar feed"
)

// Token is a citizen's personal API token as Jarvis keeps it: the
// token itself is shown once, at creation, and stored only as its SHA-256.
type Token struct {
	ID        string    `json:"id"`
	Citizen   string    `json:"citizen"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"created_at"`
}

// Feed says whether t is a calendar feed token.
func (t Token) Feed() bool { return strings.HasPrefix(t.ID, feedTokenIDPrefix) }

// TokenStore keeps personal API tokens by hash.
type TokenStore interface {
	// InsertToken stores a token under the hex SHA-256 of its plaintext.
	InsertToken(ctx context.Context, tok Token, hash string) error
	// DeleteToken deletes one of citizen's tokens; another's is ErrNotFound.
	DeleteToken(ctx context.Context, citizen, id string) error
	// TokenCitizen returns the citizen a token hash belongs to, or ErrNotFound.
	TokenCitizen(ctx context.Context, hash string) (string, error)
	// ListTokens lists citizen's tokens, oldest first.
	ListTokens(ctx context.Context, citizen string) ([]Token, error)
	// MoveTokens gives every token of citizen from to citizen to and says
	// how many.
	MoveTokens(ctx context.Context, from, to string) (int, error)
}

// Adopt gives everything of citizen from (a bridged puppet) to citizen to
// (the Matrix account it was just linked to), in one transaction: its
// tripwires with their trips, and its personal tokens, which from then on
// act for to. It says how many tripwires and tokens moved.
func (s *Service) Adopt(ctx context.Context, from, to string) (tripwires, tokens int, err error) {
	if err := CheckScope(to); err != nil {
		return 0, 0, err
	}
	err = s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		var err error
		if tripwires, err = s.deps.Store.MoveScope(ctx, from, to); err != nil {
			return err
		}
		tokens, err = s.deps.Tokens.MoveTokens(ctx, from, to)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("move the tripwires and tokens of %s to %s: %w", from, to, err)
	}
	return tripwires, tokens, nil
}

// CreateToken makes a personal API token for citizen and returns its
// plaintext, which is never shown again.
func (s *Service) CreateToken(ctx context.Context, citizen, label string) (string, Token, error) {
	if err := CheckScope(citizen); err != nil {
		return "", Token{}, err
	}
	label = strings.TrimSpace(label)
	if utf8.RuneCountInString(label) > MaxLabelLength {
		return "", Token{}, core.Invalid("label", "is longer than %d characters", MaxLabelLength)
	}
	return s.createToken(ctx, tokenPrefix, Token{ID: "tok_" + randomToken(5), Citizen: citizen, Label: label})
}

// CreateFeedToken makes a calendar feed token for citizen, which reads
// their calendar feed and nothing else, and returns its plaintext, which
// is never shown again.
func (s *Service) CreateFeedToken(ctx context.Context, citizen string) (string, Token, error) {
	if err := CheckScope(citizen); err != nil {
		return "", Token{}, err
	}
	return s.createToken(ctx, feedTokenPrefix, Token{ID: feedTokenIDPrefix + randomToken(5), Citizen: citizen, Label: FeedTokenLabel})
}

// createToken stores tok under the hash of a new plaintext starting with
// prefix, and returns the plaintext.
func (s *Service) createToken(ctx context.Context, prefix string, tok Token) (string, Token, error) {
	plain := prefix + randomToken(32)
	tok.CreatedAt = msTime(s.deps.Clock.Now())
	if err := s.deps.Tokens.InsertToken(ctx, tok, hashToken(plain)); err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", err)
	}
	return plain, tok, nil
}

// RevokeToken deletes one of citizen's tokens; requests bearing it fail
// from then on.
func (s *Service) RevokeToken(ctx context.Context, citizen, id string) error {
	if err := CheckScope(citizen); err != nil {
		return err
	}
	if err := s.deps.Tokens.DeleteToken(ctx, citizen, id); err != nil {
		return fmt.Errorf("revoke token %q: %w", id, err)
	}
	return nil
}

// ListTokens lists citizen's tokens (without their plaintext).
func (s *Service) ListTokens(ctx context.Context, citizen string) ([]Token, error) {
	if err := CheckScope(citizen); err != nil {
		return nil, err
	}
	toks, err := s.deps.Tokens.ListTokens(ctx, citizen)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return toks, nil
}

// CitizenForToken returns the scope a personal API token acts for; an
// unknown or revoked token, and a calendar feed token, is ErrUnauthorized.
func (s *Service) CitizenForToken(ctx context.Context, token string) (string, error) {
	return s.citizenFor(ctx, tokenPrefix, token)
}

// CitizenForFeedToken returns whose calendar a feed token reads; an
// unknown or revoked token, and a personal API token, is ErrUnauthorized.
func (s *Service) CitizenForFeedToken(ctx context.Context, token string) (string, error) {
	return s.citizenFor(ctx, feedTokenPrefix, token)
}

// citizenFor looks a token of the kind prefix starts up.
func (s *Service) citizenFor(ctx context.Context, prefix, token string) (string, error) {
	if !strings.HasPrefix(token, prefix) {
		return "", core.ErrUnauthorized
	}
	citizen, err := s.deps.Tokens.TokenCitizen(ctx, hashToken(token))
	switch {
	case errors.Is(err, core.ErrNotFound):
		return "", core.ErrUnauthorized
	case err != nil:
		return "", fmt.Errorf("look up token: %w", err)
	}
	return citizen, nil
}

func hashToken(plain string) string {
	sum := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(sum[:])
}
