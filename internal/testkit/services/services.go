// Package services wires the core services on a real store for tests, as
// cmd/jarvis wires them: each on its own tables of the store, in the
// store's transactions, writing to its outbox, with one clock, one
// dedicated room and its admins.
//
// A test names what it shares once, in a Wiring, and asks it for the
// services it needs with their configuration:
//
//	w := services.Wiring{Store: st, Clock: clock, Room: "!ops:test", Admins: admins}
//	oc := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
//	b := w.Breakers(testconfig.Breaker(), func(d *breaker.Deps) { d.Incidents = oc })
//
// What a test wires differently from the default (a hook, another
// service, a store it wraps, no room) it says in a function that changes
// the service's Deps before the service is built.
package services

import (
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/quiet"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/schedule"
	"github.com/jarvis-hmi/jarvis/store"
)

// Wiring is what the services of one test share.
type Wiring struct {
	// Store holds every service's tables, transactions and outbox.
	Store *store.Store
	// Clock is every service's clock.
	Clock core.Clock
	// Room is the dedicated room; empty wires the services without one.
	Room string
	// Admins are the admins the services mention and ask.
	Admins []string
}

// apply changes deps by each of wire, in order.
func apply[D any](deps *D, wire []func(*D)) {
	for _, w := range wire {
		w(deps)
	}
}

// Oncall returns the on-call service.
func (w Wiring) Oncall(cfg oncall.Config, wire ...func(*oncall.Deps)) *oncall.Service {
	deps := oncall.Deps{Store: w.Store.Incidents(), Tx: w.Store, Outbox: w.Store.Outbox(), Clock: w.Clock, Admins: w.Admins, Room: w.Room}
	apply(&deps, wire)
	return oncall.NewService(cfg, deps)
}

// BreakerDeps returns what the breaker service works with by default.
func (w Wiring) BreakerDeps() breaker.Deps {
	return breaker.Deps{Store: w.Store.Breakers(), Tx: w.Store, Outbox: w.Store.Outbox(), Clock: w.Clock, Room: w.Room, Admins: w.Admins}
}

// Breakers returns the circuit breaker service; cfg must be valid.
func (w Wiring) Breakers(cfg breaker.Config, wire ...func(*breaker.Deps)) *breaker.Service {
	deps := w.BreakerDeps()
	apply(&deps, wire)
	return breaker.NewService(cfg, deps)
}

// Cards returns the card service; cfg must be valid.
func (w Wiring) Cards(cfg card.Config, wire ...func(*card.Deps)) *card.Service {
	deps := card.Deps{Store: w.Store.Cards(), Tx: w.Store, Outbox: w.Store.Outbox(), Clock: w.Clock, Room: w.Room, Admins: w.Admins}
	apply(&deps, wire)
	return card.NewService(cfg, deps)
}

// Approvals returns the approval service; cfg must be valid.
func (w Wiring) Approvals(cfg approval.Config, wire ...func(*approval.Deps)) *approval.Service {
	deps := approval.Deps{Store: w.Store.Approvals(), Tx: w.Store, Outbox: w.Store.Outbox(), Clock: w.Clock, Room: w.Room, Admins: w.Admins}
	apply(&deps, wire)
	return approval.NewService(cfg, deps)
}

// TripwireDeps returns what the tripwire service works with by default:
// sources, and the store's history of what the evaluator reads.
func (w Wiring) TripwireDeps(sources *core.SourceRegistry) tripwire.Deps {
	return tripwire.Deps{Store: w.Store.Tripwires(), Tokens: w.Store.TripwireTokens(), Tx: w.Store, Outbox: w.Store.Outbox(),
		Sources: sources, Clock: w.Clock, History: w.Store, Room: w.Room}
}

// Tripwires returns the tripwire service reading sources.
func (w Wiring) Tripwires(cfg tripwire.Config, sources *core.SourceRegistry, wire ...func(*tripwire.Deps)) *tripwire.Service {
	deps := w.TripwireDeps(sources)
	apply(&deps, wire)
	return tripwire.NewService(cfg, deps)
}

// Credentials returns the credential service, which issues tokens for
// any agent unless wire lists the agents.
func (w Wiring) Credentials(wire ...func(*credential.Deps)) *credential.Service {
	deps := credential.Deps{Store: w.Store.Credentials(), Clock: w.Clock}
	apply(&deps, wire)
	return credential.NewService(deps)
}

// Fleet returns the fleet service for the agents of cfg, keeping spend,
// boots and history; it fails tb when cfg is refused.
func (w Wiring) Fleet(tb testing.TB, cfg fleet.Config, wire ...func(*fleet.Deps)) *fleet.Service {
	tb.Helper()
	deps := fleet.Deps{Tx: w.Store, Heartbeats: w.Store.Heartbeats(), Journal: w.Store.AgentJournal(), Attestations: w.Store.Attestations(),
		Meter: w.Store.Meter(), History: w.Store, Outbox: w.Store.Outbox(), Clock: w.Clock, Room: w.Room, Admins: w.Admins,
		ParseSchedule: schedule.Parse, Agents: w.Store.AddedAgents()}
	apply(&deps, wire)
	f, err := fleet.NewService(cfg, deps)
	if err != nil {
		tb.Fatalf("new fleet service: %v", err)
	}
	return f
}

// Lease returns the workspace lease of holder.
func (w Wiring) Lease(cfg lease.Config, holder string, wire ...func(*lease.Deps)) *lease.Lease {
	deps := lease.Deps{Holder: holder, Store: w.Store.Leases(), Tx: w.Store, Outbox: w.Store.Outbox(), Clock: w.Clock, Room: w.Room}
	apply(&deps, wire)
	return lease.New(cfg, deps)
}

// Retention returns the retention service.
func (w Wiring) Retention(cfg retention.Config, wire ...func(*retention.Deps)) *retention.Service {
	deps := retention.Deps{Store: w.Store, Clock: w.Clock}
	apply(&deps, wire)
	return retention.New(cfg, deps)
}

// Quiet returns the quiet-hours service.
func (w Wiring) Quiet(wire ...func(*quiet.Deps)) *quiet.Service {
	deps := quiet.Deps{Store: w.Store.Quiet(), Tx: w.Store, Outbox: w.Store.Outbox(), Clock: w.Clock}
	apply(&deps, wire)
	return quiet.NewService(deps)
}

// Reminders returns the reminder service.
func (w Wiring) Reminders(wire ...func(*reminder.Deps)) *reminder.Service {
	deps := reminder.Deps{Store: w.Store.Reminders(), Tx: w.Store, Outbox: w.Store.Outbox(), Clock: w.Clock}
	apply(&deps, wire)
	return reminder.NewService(deps)
}
