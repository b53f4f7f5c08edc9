package bridge

import (
	"slices"
	"testing"
)

func TestPuppetsForAHandle(t *testing.T) {
	cfg := Config{Networks: []Network{{Name: "telegram", Users: "@telegram_*"}, {Name: "whatsapp", Users: "@whatsapp_*"}}}
	users := []User{
		{UserID: "@telegram_101:x", DisplayName: "bob"},
		{UserID: "@telegram_102:x", DisplayName: "Carol"},
		{UserID: "@telegram_103:x", DisplayName: "carol"},
		{UserID: "@whatsapp_104:x", DisplayName: "dave"},
		{UserID: "@dave:x", DisplayName: "dave"},
		{UserID: "@telegram_dave:x", DisplayName: "Someone"},
	}
	tests := []struct {
		name, network, handle string
		want                  []string
		known                 bool
	}{
		{name: "by display name", network: "telegram", handle: "@bob", want: []string{"@telegram_101:x"}, known: true},
		{name: "by the user ID scheme", network: "telegram", handle: "101", want: []string{"@telegram_101:x"}, known: true},
		{name: "two display names are ambiguous", network: "telegram", handle: "CAROL", want: []string{"@telegram_102:x", "@telegram_103:x"}, known: true},
		{name: "only the network's puppets", network: "telegram", handle: "dave", want: []string{"@telegram_dave:x"}, known: true},
		{name: "another network", network: "WhatsApp", handle: "dave", want: []string{"@whatsapp_104:x"}, known: true},
		{name: "unknown handle", network: "telegram", handle: "erin", known: true},
		{name: "empty handle", network: "telegram", handle: "@", known: true},
		{name: "a pattern is no handle", network: "telegram", handle: "*", known: true},
		{name: "unknown network", network: "signal", handle: "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := cfg.Puppets(tt.network, tt.handle, users)
			if known != tt.known || !slices.Equal(got, tt.want) {
				t.Errorf("Puppets(%s, %s) = %q, %v; want %q, %v", tt.network, tt.handle, got, known, tt.want, tt.known)
			}
		})
	}
}
