package commands

import (
	"context"
	"slices"
	"time"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
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

// AddFeatures adds the commands of the features given, with their
// confirmations, the answers to their notices and the sentences that
// become their commands. It is the one place Jarvis's commands are
// registered, in the order `!help` lists them; a feature added twice
// panics, its names being taken.
func (p *Processor) AddFeatures(f Features) {
	if f.System != nil {
		p.sys = f.System
		sys := *cmdSys
		var token []*Handler
		if f.Credentials != nil {
			p.credentials = f.Credentials
			token = []*Handler{cmdSysToken}
		}
		sys.Subcommands = slices.Concat(cmdSys.Subcommands, sectionVerbs(f.System.Sections), token, []*Handler{cmdSysHelp})
		p.Register(&sys)
		p.RegisterConfirm(confirmSysClear, confirmSysRestart)
	}
	if f.Cards != nil {
		p.cards = f.Cards
		p.Register(cmdCard)
		p.RegisterConfirm(confirmCardPublish)
		p.OnAnswer("decision:", onDecisionAnswer)
	}
	var claims *oncallCommands
	if f.OnCall != nil {
		claims = &oncallCommands{svc: f.OnCall}
	}
	if f.Approvals != nil {
		c := &approvalCommands{svc: f.Approvals, claims: claims}
		p.approvals = c
		p.Register(c.handler())
		p.OnAnswer("approval:", c.onAnswer)
	}
	if f.Breakers != nil {
		p.breakers = f.Breakers
		p.Register(cmdBreaker)
		p.OnAnswer("breaker:", breakerOnAnswer(claims))
	}
	if f.Identities != nil {
		p.identities = f.Identities
		p.bridges, p.searchUsers = f.Bridges, f.SearchUsers
		p.Register(cmdRatify, cmdLink, cmdUnlink)
		p.RegisterConfirm(confirmUnlinkKind, confirmLinkKind)
	}
	if f.Fleet != nil {
		p.fleet = f.Fleet
		p.Register(cmdFleet)
		p.AddIntent(func(text string) (string, []string, bool) { return fleetQuestion(text, p.fleet.Agents()) })
	}
	if claims != nil {
		p.OnAnswer("fleet:", claims.onFleetAnswer)
		p.OnAnswer(oncall.EscalationKeyPrefix, claims.onEscalationAnswer)
		p.OnAnswer(oncall.WokeKeyPrefix, claims.onWokeAnswer)
		p.OnAnswer("crash-loop:", claims.onAlertAnswer)
		p.OnAnswer("spend:", claims.onAlertAnswer)
		p.OnAnswer("trip:", claims.onTripAnswer)
		p.OnAnswer("wake:", claims.onWakeAnswer)
		p.Register(claims.silenceHandler())
	}
	if f.Agents != nil {
		p.agents = f.Agents
	}
	if f.Tripwires != nil {
		c := &tripwireCommands{tw: f.Tripwires, agents: f.Agents}
		if c.agents == nil {
			c.agents = func() []string { return nil }
		}
		p.tripwires = c
		p.Register(cmdTripwire)
		ttl := f.ProposalTTL
		if ttl <= 0 {
			ttl = DefaultProposalTTL
		}
		p.RegisterConfirm(ConfirmKind{Kind: confirmTripwire, TTL: ttl, OnConfirm: c.confirmProposal, OnDismiss: c.dismissProposal,
			YesWord: "arm", NoWord: "dismiss", YesDoes: "arm", NoDoes: "dismiss"})
		p.AddIntent(c.intent)
	}
	if f.Reminders != nil {
		p.reminders = &reminderCommands{svc: f.Reminders, people: f.People, quiet: f.Quiet}
		p.Register(cmdRemind, cmdMe)
		p.OnAnswer(reminder.NoticeKeyPrefix, remindAnswer)
		p.AddAddressedIntent(remindIntent)
	}
	if f.Notebook != nil {
		p.notebook = &notebookCommands{svc: f.Notebook}
		p.Register(cmdTask, cmdNote, cmdIdea)
		p.AddAddressedIntent(notebookIntent)
	}
	if p.byName["ask"] == nil {
		p.registerAsk()
	}
}
