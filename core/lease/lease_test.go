package lease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// exampleTTL is workspace.lease_ttl as config.example.yaml gives it.
const exampleTTL = 30 * time.Second

func TestLeaseConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantField string
	}{
		{name: "default ttl", cfg: Config{WorkspaceID: "ws1", TTL: exampleTTL}},
		{name: "shortest ttl", cfg: Config{WorkspaceID: "ws1", TTL: MinLeaseTTL}},
		{name: "no workspace", cfg: Config{WorkspaceID: " ", TTL: exampleTTL}, wantField: "workspace.id"},
		{name: "no ttl", cfg: Config{WorkspaceID: "ws1"}, wantField: "workspace.lease_ttl"},
		{name: "ttl too short", cfg: Config{WorkspaceID: "ws1", TTL: time.Second}, wantField: "workspace.lease_ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			var fe *core.FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Errorf("Validate: %v, want an error on %s", err, tt.wantField)
			}
		})
	}
}

func TestLeaseHeldError(t *testing.T) {
	since := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	err := error(&HeldError{Lease: Record{WorkspaceID: "ws1", Holder: "jarvis-b", Epoch: 7,
		AcquiredAt: since, ExpiresAt: since.Add(exampleTTL)}})
	if !errors.Is(err, core.ErrLeaseHeld) {
		t.Errorf("%v is not ErrLeaseHeld", err)
	}
	want := "jarvis-b holds it since 2025-03-01T12:00:00Z (epoch 7, until 2025-03-01T12:00:30Z)"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("message %q lacks %q", err, want)
	}
}
