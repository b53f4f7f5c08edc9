package core

import "testing"

func TestTrustOrder(t *testing.T) {
	tests := []struct {
		name  string
		parts []Trust
		want  Trust
	}{
		{name: "nothing is native", want: TrustNative},
		{name: "native alone", parts: []Trust{TrustNative}, want: TrustNative},
		{name: "an empty trust counts as native", parts: []Trust{"", TrustNative}, want: TrustNative},
		{name: "linked is below native", parts: []Trust{TrustNative, TrustLinked}, want: TrustLinked},
		{name: "bridged is below linked", parts: []Trust{TrustLinked, TrustBridged, TrustNative}, want: TrustBridged},
		{name: "relay is below bridged", parts: []Trust{TrustBridged, TrustRelay}, want: TrustRelay},
		{name: "external is the weakest", parts: []Trust{TrustRelay, TrustExternal, TrustNative}, want: TrustExternal},
		{name: "an unknown value counts as external", parts: []Trust{TrustNative, "trusted"}, want: TrustExternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Derive(tt.parts...); got != tt.want {
				t.Errorf("Derive(%v) = %q, want %q", tt.parts, got, tt.want)
			}
		})
	}
	for i, hi := range Trusts {
		for j, lo := range Trusts {
			if got := hi.AtLeast(lo); got != (i <= j) {
				t.Errorf("%s.AtLeast(%s) = %v, want %v", hi, lo, got, i <= j)
			}
		}
	}
	if Trust("trusted").AtLeast(TrustExternal) {
		t.Error("an unknown trust counts as at least external; it must count as less than every level")
	}
}
