package coretest

import (
	"context"

	"github.com/jarvis-hmi/jarvis/core"
)

// BeforeTx is a transactor that runs Hook, once, before the next
// transaction it is asked for: what another process writes between a
// service's reads and its transaction.
type BeforeTx struct {
	core.Transactor
	Hook func()
}

// InTx runs Hook, if set, then fn in a transaction.
func (b *BeforeTx) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if h := b.Hook; h != nil {
		b.Hook = nil
		h()
	}
	return b.Transactor.InTx(ctx, fn)
}
