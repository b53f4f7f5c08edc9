package core

import "context"

type urgentKey struct{}

// Urgent marks ctx as carrying work a person is waiting for: answering a
// chat command, sending what the outbox holds. A store that serialises its
// writers lets an urgent transaction go before the others waiting (the
// heartbeat batches, the evaluator's passes), so chat does not queue
// behind a stream of agents' reports.
func Urgent(ctx context.Context) context.Context {
	return context.WithValue(ctx, urgentKey{}, true)
}

// IsUrgent reports whether ctx was marked with Urgent.
func IsUrgent(ctx context.Context) bool {
	urgent, _ := ctx.Value(urgentKey{}).(bool)
	return urgent
}
