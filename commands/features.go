package commands

import (
	"context"
	"time"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/alertmanager"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/converse"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/quiet"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// Features are what Jarvis's commands act on. A feature left out has no
// commands: tests build processors with the one they test.
type Features struct {
	// System gives the admin verbs, `!sys`.
	System *System
	// Cards gives `!card` and the answers to a card's questions.
	Cards *card.Service
	// Approvals gives `!approval` and the answers to agents' approval
	// requests.
	Approvals *approval.Service
	// Breakers gives `!breaker` and the answers to halt notices.
	Breakers *breaker.Service
	// Identities gives `!link` and `!ratify`.
	Identities core.IdentityStore
	// Bridges and SearchUsers let `!link network:handle` find the puppet a
	// handle names, through the homeserver's user directory.
	Bridges     bridge.Config
	SearchUsers func(ctx context.Context, term string) ([]bridge.User, error)
	// Fleet gives `!fleet` and the questions people ask about the fleet.
	Fleet FleetReader
	// Tripwires gives `!tw`, the sentences that propose a tripwire
	// ("tell me when GI drops below 0.70") and the ✅ that arms one.
	Tripwires *tripwire.Service
	// Credentials gives `!sys token`, the HTTP API's tokens (with System).
	Credentials *credential.Service
	// Agents lists the configured agent names, for sentences about an
	// agent.
	Agents func() []string
	// Reminders gives `!remind`, `!me` and the sentences that set a
	// reminder ("remind me to … tomorrow at 10"), with People.
	Reminders *reminder.Service
	People    PersonStore
	// Quiet gives `!me quiet`, with Reminders.
	Quiet *quiet.Service
	// Notebook gives `!task`, `!note`, `!idea` and the sentences that
	// become them ("add a task: …", "note: …", "idea: …").
	Notebook *notebook.Service
	// OnCall takes the claims (👀, or a reply `mine`) and snoozes (💤, or a
	// reply `snooze 4h`) on the alerts the fleet raises in the room:
	// silences, crash loops, budgets; with Tripwires, 💤 on the trips
	// pushed to a person; and `!silence`, maintenance windows.
	OnCall *oncall.Service
	// Model, when set, converses about what the grammar does not
	// understand: it reads through read-only tools and proposes through
	// the grammar's own proposals; it never acts.
	Model converse.Model
	// ProposalTTL is how long a tripwire proposed in chat waits for its
	// ✅ (DefaultProposalTTL when not positive).
	ProposalTTL time.Duration
}

// PersonStore keeps what a person set about themselves.
type PersonStore interface {
	// TimeZone returns the IANA time zone a person set, "" when none.
	TimeZone(ctx context.Context, user string) (string, error)
	SetTimeZone(ctx context.Context, user, zone string) error
}

// builtins are the commands of every processor.
var builtins = []*Handler{cmdHelp, cmdPing}

// featureSet holds the features a processor has, each the struct its
// handlers are methods of, holding what they act on. No handler reads it:
// it is kept so that the features added by one call of AddFeatures are
// wired to those of another (a link moves what a puppet owns in the
// features there, `!ask` answers from them), and for what the processor
// reads itself: a person's time zone (reminders), the agents' names
// (fleet, agents) and what it can do for someone it did not understand.
type featureSet struct {
	sys       *sysCommands
	cards     *cardCommands
	approvals *approvalCommands
	breakers  *breakerCommands
	links     *linkCommands
	fleet     *fleetCommands
	oncall    *oncallCommands
	tripwires *tripwireCommands
	reminders *reminderCommands
	notebook  *notebookCommands
	ask       *askCommands
	// agents lists the configured agents, for sentences about an agent
	// when there is no fleet.
	agents func() []string
	// model converses about what the grammar does not understand.
	model converse.Model
}

// AddFeatures adds the commands of the features given, with their
// confirmations, the answers to their notices and the sentences that
// become their commands. It is the one place Jarvis's commands are
// registered, in the order `!help` lists them; a feature added twice
// panics, its names being taken.
func (p *Processor) AddFeatures(f Features) {
	s := &p.features
	if f.System != nil {
		s.sys = &sysCommands{sys: f.System}
		var token []*Handler
		if f.Credentials != nil {
			token = []*Handler{(&tokenCommands{svc: f.Credentials}).handler()}
		}
		p.Register(s.sys.handler(token))
		p.RegisterConfirm(s.sys.confirms()...)
	}
	if f.Cards != nil {
		c := &cardCommands{svc: f.Cards}
		s.cards = c
		p.Register(c.handlers()...)
		p.RegisterConfirm(c.publishConfirm())
		p.OnAnswer("decision:", c.onDecisionAnswer)
		p.AddAddressedIntent(cardStopIntent)
	}
	var claims *oncallCommands
	if f.OnCall != nil {
		claims = &oncallCommands{svc: f.OnCall}
		s.oncall = claims
	}
	if f.Approvals != nil {
		c := &approvalCommands{svc: f.Approvals}
		s.approvals = c
		p.Register(c.handlers()...)
		p.OnAnswer("approval:", c.onAnswer)
	}
	if f.Breakers != nil {
		c := &breakerCommands{svc: f.Breakers}
		s.breakers = c
		p.Register(c.handlers()...)
		p.OnAnswer("breaker:", c.onAnswer)
	}
	if f.Identities != nil {
		l := &linkCommands{ids: f.Identities, bridges: f.Bridges, searchUsers: f.SearchUsers}
		s.links = l
		p.Register(l.handlers()...)
		p.RegisterConfirm(l.confirms()...)
	}
	if f.Fleet != nil {
		c := &fleetCommands{reader: f.Fleet}
		s.fleet = c
		p.Register(c.handlers()...)
		p.AddIntent(c.intent)
	}
	if claims != nil {
		p.OnAnswer("fleet:", claims.onFleetAnswer)
		p.OnAnswer(oncall.EscalationKeyPrefix, claims.onEscalationAnswer)
		p.OnAnswer(oncall.WokeKeyPrefix, claims.onWokeAnswer)
		p.OnAnswer(oncall.LapsedKeyPrefix, claims.onLapsedAnswer)
		p.OnAnswer("crash-loop:", claims.onAlertAnswer)
		p.OnAnswer("spend:", claims.onAlertAnswer)
		p.OnAnswer("fail:", claims.onAlertAnswer)
		p.OnAnswer("trip:", claims.onTripAnswer)
		p.OnAnswer("wake:", claims.onWakeAnswer)
		p.OnAnswer(alertmanager.Kind+":", claims.onAlertAnswer)
		p.Register(claims.silenceHandler())
	}
	if f.Agents != nil {
		s.agents = f.Agents
	}
	if f.Model != nil {
		s.model = f.Model
	}
	if f.Tripwires != nil {
		c := &tripwireCommands{tw: f.Tripwires, agents: f.Agents}
		if c.agents == nil {
			c.agents = func() []string { return nil }
		}
		s.tripwires = c
		p.Register(c.handlers()...)
		ttl := f.ProposalTTL
		if ttl <= 0 {
			ttl = DefaultProposalTTL
		}
		p.RegisterConfirm(ConfirmKind{Kind: confirmTripwire, TTL: ttl, OnConfirm: c.confirmProposal, OnDismiss: c.dismissProposal,
			YesWord: "arm", NoWord: "dismiss", YesDoes: "arm", NoDoes: "dismiss"})
		p.AddIntent(c.intent)
	}
	if f.Reminders != nil {
		c := &reminderCommands{svc: f.Reminders, people: f.People, quiet: f.Quiet}
		s.reminders = c
		p.Register(c.handlers()...)
		p.OnAnswer(reminder.NoticeKeyPrefix, c.onAnswer)
		p.RegisterConfirm(ConfirmKind{Kind: confirmReminder, TTL: proposedReminderTTL, OnConfirm: c.confirmProposed, YesDoes: "set it", NoDoes: "dismiss"})
		p.AddAddressedIntent(remindIntent)
	}
	if f.Notebook != nil {
		c := &notebookCommands{svc: f.Notebook}
		s.notebook = c
		p.Register(c.handlers()...)
		p.AddAddressedIntent(notebookIntent)
	}
	if p.byName["ask"] == nil {
		// `!ask` has the topics of the features added first.
		s.ask = &askCommands{}
		s.wire()
		p.Register(s.ask.handler())
	}
	s.wire()
}

// wire points each feature at the others it acts on, whichever call of
// AddFeatures added them.
func (s *featureSet) wire() {
	if c := s.approvals; c != nil {
		c.claims = s.oncall
	}
	if c := s.breakers; c != nil {
		c.claims = s.oncall
	}
	if c := s.oncall; c != nil {
		c.tripwires = s.tripwires
	}
	if c := s.notebook; c != nil {
		c.reminders = s.reminders
	}
	if l := s.links; l != nil {
		l.tripwires, l.reminders, l.notebook, l.cards, l.approvals = s.tripwires, s.reminders, s.notebook, s.cards, s.approvals
	}
	if a := s.ask; a != nil {
		a.breakers, a.cards, a.tripwires = s.breakers, s.cards, s.tripwires
		if s.sys != nil {
			a.sys = s.sys.sys
		}
	}
}
