package card

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Limits on what a card set may hold.
const (
	MaxPerSet         = 50
	MaxGoalLen        = 1000
	MaxAcceptance     = 30
	MaxCriterionLen   = 1000
	MaxDependsOn      = 50
	MaxBudgetLen      = 200
	MaxIdempotencyKey = 200
	MaxAuthorLen      = 255
)

// refPattern is what a card's name inside its set looks like.
var refPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// IDPrefix starts every card id, and SetIDPrefix every set id.
const (
	IDPrefix    = "card_"
	SetIDPrefix = "set_"
)

// Input is one card of a set to publish.
type Input struct {
	// Ref optionally names the card inside its set, so that other cards of
	// the set can depend on it before it has an id.
	Ref string
	Spec
}

// SetInput is a card set to publish.
type SetInput struct {
	// Key is the client's idempotency key: publishing the same key again
	// with the same cards returns the first result and publishes nothing.
	Key string
	// Author wrote the cards; RatifiedBy is the person who approved them,
	// if anyone did.
	Author     string
	RatifiedBy string
	Cards      []Input
	// SourceTrust is where the cards' text came from; native when empty.
	SourceTrust core.Trust

	// awaiting publishes the cards waiting for ratification, not on the
	// backlog: PublishDraft sets it for text below linked trust.
	awaiting bool
	// publishedIn is the message PublishDraft was confirmed in.
	publishedIn Message
}

// Set is a published set of cards.
type Set struct {
	ID  string
	Key string
	// Fingerprint is a hash of the published content, to tell a retry
	// from a different request that reuses the key.
	Fingerprint string
	Author      string
	RatifiedBy  string
	// Size is the number of cards; a stored set always has exactly that
	// many cards.
	Size        int
	PublishedAt time.Time
	// PublishedIn is the message a person published the set with, in
	// whose thread what becomes of its cards is told; empty for a set an
	// agent published.
	PublishedIn Message
}

// Message is one of Jarvis's messages: its room and its outbox key.
type Message struct {
	Room   string
	Notice string
}

// PublishedSet is the result of publishing: the set and its cards in the
// order given. Replayed is true when the key had been published before and
// nothing was written now.
type PublishedSet struct {
	Set
	Cards    []Card
	Replayed bool
}

// SetStore keeps published card sets.
type SetStore interface {
	// InsertCardSet writes a set; a key already used returns ErrDuplicate.
	InsertCardSet(ctx context.Context, s Set) error
	// InsertCards writes the cards of a set, in the order given.
	InsertCards(ctx context.Context, setID string, cards []Card) error
	// CardSetByKey returns the set published under an idempotency key, or
	// ErrNotFound.
	CardSetByKey(ctx context.Context, key string) (Set, error)
	// CardSet returns a set by id, or ErrNotFound.
	CardSet(ctx context.Context, id string) (Set, error)
	// CardsOfSet returns a set's cards in the order they were given.
	CardsOfSet(ctx context.Context, setID string) ([]Card, error)
	// CardSetByNotice returns the set a person published by answering the
	// notice with the given key, or ErrNotFound.
	CardSetByNotice(ctx context.Context, notice string) (Set, error)
}

// Publish publishes every card of a set in one transaction, or none:
// invalid input, an unknown dependency, a dependency cycle or a priority
// budget without room refuses the whole set. Publishing a key again with
// the same content returns the first result (Replayed); with other content
// it is ErrUnprocessable.
//
// A usual set (see usualSet) reads nothing another transaction could be
// changing: its transaction is marked core.LockedReads, and one that is
// not usual is run again at full isolation.
func (c *Service) Publish(ctx context.Context, in SetInput) (PublishedSet, error) {
	var out PublishedSet
	err := c.deps.Tx.InTx(core.LockedReads(ctx), func(ctx context.Context) error {
		var err error
		out, err = c.publish(ctx, in)
		return err
	})
	if err != nil {
		return PublishedSet{}, fmt.Errorf("publish card set: %w", err)
	}
	if !out.Replayed {
		c.changed(ctx)
	}
	return out, nil
}

// publish does Publish's work inside the caller's transaction. The set is
// written before its cards: its key is unique, so of two requests with one
// key exactly one writes it, and the other finds it and replays.
//
// The key is not looked up first: on PostgreSQL a serializable read of a
// key that is not there locks the index page it would be on, which the
// keys of concurrent sets are inserted into, and most of those
// transactions were refused and run again. It is looked up only when a
// check refuses the set, since a replay is answered as the first request
// was, whatever the budget says now.
func (c *Service) publish(ctx context.Context, in SetInput) (PublishedSet, error) {
	if err := in.validate(); err != nil {
		return PublishedSet{}, err
	}
	fp, err := in.fingerprint()
	if err != nil {
		return PublishedSet{}, err
	}
	if core.ReadsLocked(ctx) && !c.usualSet(in) {
		return PublishedSet{}, core.ErrBeyondLockedReads
	}
	now := c.deps.Clock.Now()
	set := Set{ID: c.ids.Next(SetIDPrefix, now), Key: in.Key, Fingerprint: fp, Author: in.Author,
		RatifiedBy: in.RatifiedBy, Size: len(in.Cards), PublishedAt: now, PublishedIn: in.publishedIn}
	// Every check that can refuse the set reads only, before anything is
	// written: a refusal inside a larger transaction (a chat confirmation)
	// must leave nothing behind.
	cards, err := c.resolve(ctx, in, set)
	if err == nil {
		err = c.checkBudget(ctx, cards, now)
	}
	if err != nil {
		if _, lookErr := c.deps.Store.CardSetByKey(ctx, in.Key); lookErr == nil {
			return c.replay(ctx, in.Key, fp)
		} else if !errors.Is(lookErr, core.ErrNotFound) {
			return PublishedSet{}, lookErr
		}
		return PublishedSet{}, err
	}
	err = c.deps.Store.InsertCardSet(ctx, set)
	if errors.Is(err, core.ErrDuplicate) {
		return c.replay(ctx, in.Key, fp)
	} else if err != nil {
		return PublishedSet{}, err
	}
	if err := c.deps.Store.InsertCards(ctx, set.ID, cards); err != nil {
		return PublishedSet{}, err
	}
	if err := c.chargeBudget(ctx, cards, now); err != nil {
		return PublishedSet{}, err
	}
	return PublishedSet{Set: set, Cards: cards}, nil
}

// usualSet reports whether publishing in writes only the set and its cards
// and reads nothing another transaction could be changing: no card of a
// class with a budget (whose charges every set of the class reads) and no
// dependency on a card outside the set. What else it relies on, its key's
// uniqueness and its ids', the database's constraints keep at any
// isolation: of two sets under one key, the second waits for the first
// and replays it.
func (c *Service) usualSet(in SetInput) bool {
	refs := map[string]bool{}
	for _, ci := range in.Cards {
		refs[ci.Ref] = ci.Ref != ""
	}
	for _, ci := range in.Cards {
		if _, budgeted := c.budget[ci.Priority]; budgeted {
			return false
		}
		for _, dep := range ci.DependsOn {
			if !refs[dep] {
				return false
			}
		}
	}
	return true
}

// replay returns the set published before under key, if it has the same
// content; otherwise the key was reused and it is ErrUnprocessable.
func (c *Service) replay(ctx context.Context, key, fingerprint string) (PublishedSet, error) {
	prev, err := c.deps.Store.CardSetByKey(ctx, key)
	if err != nil {
		return PublishedSet{}, err
	}
	if prev.Fingerprint != fingerprint {
		return PublishedSet{}, core.Refuse(core.ErrUnprocessable,
			"idempotency key %q was used for other cards at %s", key, prev.PublishedAt.UTC().Format(time.RFC3339))
	}
	cards, err := c.deps.Store.CardsOfSet(ctx, prev.ID)
	return PublishedSet{Set: prev, Cards: cards, Replayed: true}, err
}

// resolve gives the set's cards their ids and turns dependencies on refs
// into dependencies on ids. A dependency that is neither a ref of the set
// nor a published card is refused.
func (c *Service) resolve(ctx context.Context, in SetInput, set Set) ([]Card, error) {
	idOf := map[string]string{}
	cards := make([]Card, len(in.Cards))
	for i, ci := range in.Cards {
		cards[i] = Card{ID: c.ids.Next(IDPrefix, set.PublishedAt), SetID: set.ID, Ref: ci.Ref, Priority: ci.Priority,
			Author: set.Author, RatifiedBy: set.RatifiedBy, SourceTrust: core.Derive(in.SourceTrust), State: Published,
			Revision: 1, CreatedAt: set.PublishedAt, UpdatedAt: set.PublishedAt}
		if in.awaiting {
			cards[i].State = AwaitingRatification
			cards[i].StateNote = fmt.Sprintf("its text has %s trust; waiting for a Matrix account to ratify it", cards[i].SourceTrust)
		}
		if set.RatifiedBy != "" {
			cards[i].RatifiedRevision = 1
		}
		if ci.Ref != "" {
			idOf[ci.Ref] = cards[i].ID
		}
	}
	var outside []string
	for _, ci := range in.Cards {
		for _, dep := range ci.DependsOn {
			if _, ok := idOf[dep]; !ok {
				outside = append(outside, dep)
			}
		}
	}
	var known map[string]State
	if len(outside) > 0 {
		var err error
		if known, err = c.deps.Store.CardStates(ctx, outside); err != nil {
			return nil, fmt.Errorf("look up dependencies: %w", err)
		}
	}
	for i, ci := range in.Cards {
		spec := ci.Spec
		spec.Acceptance = slices.Clone(ci.Acceptance)
		spec.DependsOn = make([]string, len(ci.DependsOn))
		for j, dep := range ci.DependsOn {
			if id, ok := idOf[dep]; ok {
				spec.DependsOn[j] = id
				continue
			}
			if _, ok := known[dep]; !ok {
				return nil, core.Invalid(fmt.Sprintf("cards[%d].depends_on[%d]", i, j),
					"%s is neither a card of this set nor a published card", dep)
			}
			spec.DependsOn[j] = dep
		}
		cards[i].Spec = spec
	}
	return cards, nil
}

// validate checks a set without looking at the database: sizes, fields,
// refs, and that dependencies inside the set form no cycle.
func (in SetInput) validate() error {
	switch {
	case strings.TrimSpace(in.Key) == "":
		return core.Invalid("idempotency_key", "is required")
	case len(in.Key) > MaxIdempotencyKey:
		return core.Invalid("idempotency_key", "longer than %d bytes", MaxIdempotencyKey)
	case strings.IndexFunc(in.Key, isControl) >= 0:
		return core.Invalid("idempotency_key", "contains control characters")
	case strings.TrimSpace(in.Author) == "":
		return core.Invalid("author", "is required")
	case len(in.Author) > MaxAuthorLen:
		return core.Invalid("author", "longer than %d bytes", MaxAuthorLen)
	case len(in.RatifiedBy) > MaxAuthorLen:
		return core.Invalid("ratified_by", "longer than %d bytes", MaxAuthorLen)
	case len(in.Cards) == 0:
		return core.Invalid("cards", "a set needs at least one card")
	case len(in.Cards) > MaxPerSet:
		return core.Invalid("cards", "a set holds at most %d cards, not %d", MaxPerSet, len(in.Cards))
	}
	refs := map[string]int{}
	for i, ci := range in.Cards {
		field := fmt.Sprintf("cards[%d]", i)
		if err := ci.validate(field); err != nil {
			return err
		}
		if ci.Ref == "" {
			continue
		}
		if j, dup := refs[ci.Ref]; dup {
			return core.Invalid(field+".ref", "%q is also the ref of cards[%d]", ci.Ref, j)
		}
		refs[ci.Ref] = i
	}
	return in.checkCycles(refs)
}

// validate checks one card's fields; field names it in errors.
func (ci Input) validate(field string) error {
	switch {
	case ci.Ref != "" && !refPattern.MatchString(ci.Ref):
		return core.Invalid(field+".ref", "must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	case strings.HasPrefix(ci.Ref, IDPrefix):
		return core.Invalid(field+".ref", "must not start with %q, which card ids use", IDPrefix)
	case strings.TrimSpace(ci.Goal) == "":
		return core.Invalid(field+".goal", "is required")
	case len(ci.Goal) > MaxGoalLen:
		return core.Invalid(field+".goal", "longer than %d bytes", MaxGoalLen)
	case len(ci.Acceptance) == 0:
		return core.Invalid(field+".acceptance", "needs at least one criterion")
	case len(ci.Acceptance) > MaxAcceptance:
		return core.Invalid(field+".acceptance", "at most %d criteria", MaxAcceptance)
	case !ci.Priority.Valid():
		return core.Invalid(field+".priority", "must be P0, P1, P2 or P3, not %q", ci.Priority)
	case len(ci.DependsOn) > MaxDependsOn:
		return core.Invalid(field+".depends_on", "at most %d dependencies", MaxDependsOn)
	case len(ci.Budget) > MaxBudgetLen:
		return core.Invalid(field+".budget", "longer than %d bytes", MaxBudgetLen)
	}
	for j, a := range ci.Acceptance {
		switch {
		case strings.TrimSpace(a) == "":
			return core.Invalid(fmt.Sprintf("%s.acceptance[%d]", field, j), "is empty")
		case len(a) > MaxCriterionLen:
			return core.Invalid(fmt.Sprintf("%s.acceptance[%d]", field, j), "longer than %d bytes", MaxCriterionLen)
		}
	}
	for j, dep := range ci.DependsOn {
		f := fmt.Sprintf("%s.depends_on[%d]", field, j)
		switch {
		case strings.TrimSpace(dep) == "":
			return core.Invalid(f, "is empty")
		case ci.Ref != "" && dep == ci.Ref:
			return core.Invalid(f, "a card cannot depend on itself")
		case slices.Index(ci.DependsOn, dep) < j:
			return core.Invalid(f, "%s is listed twice", dep)
		}
	}
	return nil
}

// checkCycles refuses dependencies inside the set that go round in a
// circle, naming the circle.
func (in SetInput) checkCycles(refs map[string]int) error {
	const (
		unseen = iota
		visiting
		finished
	)
	mark := make([]int, len(in.Cards))
	var path []int
	var visit func(i int) error
	visit = func(i int) error {
		mark[i] = visiting
		path = append(path, i)
		for _, dep := range in.Cards[i].DependsOn {
			j, ok := refs[dep]
			if !ok {
				continue
			}
			switch mark[j] {
			case visiting:
				start := slices.Index(path, j)
				names := make([]string, 0, len(path)-start+1)
				for _, k := range path[start:] {
					names = append(names, in.Cards[k].Ref)
				}
				names = append(names, in.Cards[j].Ref)
				return core.Invalid(fmt.Sprintf("cards[%d].depends_on", i), "dependency cycle: %s", strings.Join(names, " → "))
			case unseen:
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		mark[i] = finished
		return nil
	}
	for i := range in.Cards {
		if mark[i] == unseen {
			if err := visit(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// fingerprint hashes what the set publishes, so that a retry with the same
// content is told from a different request reusing the key.
func (in SetInput) fingerprint() (string, error) {
	b, err := json.Marshal(struct {
		Author, RatifiedBy string
		Cards              []Input
	}{in.Author, in.RatifiedBy, in.Cards})
	if err != nil {
		return "", fmt.Errorf("fingerprint card set: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// Draft is a card a person is drafting. A person's drafts form one set that
// PublishDraft publishes whole.
type Draft struct {
	// DraftID is shared by all of a person's current drafts; publishing
	// uses it as the idempotency key.
	DraftID string
	// Seq numbers the person's drafts in the order added; the card's Ref
	// is "d" followed by it, and other drafts may depend on that ref.
	Seq int
	Input
	// SourceTrust is where the draft's text came from.
	SourceTrust core.Trust
	AddedAt     time.Time
}

// DraftStore keeps each person's draft cards.
type DraftStore interface {
	// AddDraft writes a draft card of a person.
	AddDraft(ctx context.Context, person string, d Draft) error
	// Drafts returns a person's drafts in the order added.
	Drafts(ctx context.Context, person string) ([]Draft, error)
	// DropDraft removes one draft by its ref, or returns ErrNotFound.
	DropDraft(ctx context.Context, person, ref string) error
	// ClearDrafts removes all of a person's drafts and says how many.
	ClearDrafts(ctx context.Context, person string) (int, error)
}

// AddDraft adds a card to a person's draft set and returns it with its ref
// ("d1", "d2", …), keeping where its text came from. Dependencies may name
// earlier drafts by ref, or published cards by id; they are checked at
// publishing.
func (c *Service) AddDraft(ctx context.Context, person string, spec Spec, trust core.Trust) (Draft, error) {
	if strings.TrimSpace(person) == "" {
		return Draft{}, core.Invalid("person", "is required")
	}
	if err := (Input{Spec: spec}).validate("card"); err != nil {
		return Draft{}, err
	}
	var out Draft
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		drafts, err := c.deps.Store.Drafts(ctx, person)
		if err != nil {
			return err
		}
		if len(drafts) >= MaxPerSet {
			return core.Invalid("card", "a draft holds at most %d cards", MaxPerSet)
		}
		now := c.deps.Clock.Now()
		out = Draft{DraftID: c.ids.Next("draft_", now), Seq: 1, SourceTrust: core.Derive(trust), AddedAt: now}
		for _, d := range drafts {
			out.DraftID = d.DraftID
			out.Seq = max(out.Seq, d.Seq+1)
		}
		out.Ref = "d" + strconv.Itoa(out.Seq)
		out.Spec = spec
		if slices.Contains(spec.DependsOn, out.Ref) {
			return core.Invalid("card.depends_on", "a card cannot depend on itself")
		}
		return c.deps.Store.AddDraft(ctx, person, out)
	})
	if err != nil {
		return Draft{}, fmt.Errorf("add draft card for %s: %w", person, err)
	}
	return out, nil
}

// Drafts returns a person's draft cards in the order added.
func (c *Service) Drafts(ctx context.Context, person string) ([]Draft, error) {
	drafts, err := c.deps.Store.Drafts(ctx, person)
	if err != nil {
		return nil, fmt.Errorf("drafts of %s: %w", person, err)
	}
	return drafts, nil
}

// DropDraft removes one of a person's draft cards by its ref.
func (c *Service) DropDraft(ctx context.Context, person, ref string) error {
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		return c.deps.Store.DropDraft(ctx, person, ref)
	})
	if err != nil {
		return fmt.Errorf("drop draft %s of %s: %w", ref, person, err)
	}
	return nil
}

// ClearDrafts removes all of a person's draft cards and says how many
// there were.
func (c *Service) ClearDrafts(ctx context.Context, person string) (int, error) {
	var n int
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		var err error
		n, err = c.deps.Store.ClearDrafts(ctx, person)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("clear drafts of %s: %w", person, err)
	}
	return n, nil
}

// DraftTrust is the trust of drafts published by an account writing at
// trust: the weakest of it and the drafts'.
func DraftTrust(drafts []Draft, trust core.Trust) core.Trust {
	for _, d := range drafts {
		trust = core.Derive(trust, d.SourceTrust)
	}
	return core.Derive(trust)
}

// PublishDraft publishes a person's draft cards as one set, authored by
// MainAgent, and clears the draft, in one transaction. trust is that of
// the account confirming the publication. When it and every draft's text
// are at least linked, the person ratifies the set and it goes to the
// backlog; otherwise (a bridged account linked to nobody, a relay) the
// cards wait for ratification from a Matrix account (Ratify). in is the
// message the person confirmed in: what becomes of the cards is told in
// its thread. An empty draft is ErrInvalid.
func (c *Service) PublishDraft(ctx context.Context, person string, trust core.Trust, in Message) (PublishedSet, error) {
	var out PublishedSet
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		drafts, err := c.deps.Store.Drafts(ctx, person)
		if err != nil {
			return err
		}
		if len(drafts) == 0 {
			return core.Invalid("draft", "%s has no draft cards", person)
		}
		set := SetInput{Key: "draft:" + drafts[0].DraftID, Author: MainAgent, RatifiedBy: person,
			SourceTrust: DraftTrust(drafts, trust), publishedIn: in}
		for _, d := range drafts {
			set.Cards = append(set.Cards, d.Input)
		}
		if !set.SourceTrust.AtLeast(core.TrustLinked) {
			set.RatifiedBy, set.awaiting = "", true
		}
		if out, err = c.publish(ctx, set); err != nil {
			return err
		}
		_, err = c.deps.Store.ClearDrafts(ctx, person)
		return err
	})
	if err != nil {
		return PublishedSet{}, fmt.Errorf("publish draft of %s: %w", person, err)
	}
	c.changed(ctx)
	return out, nil
}
