package core

import (
	"encoding/json"
	"math"
)

// NormalizeValue turns a Go or JSON scalar into float64, string or bool.
func NormalizeValue(v any) (any, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case string, bool:
		return x, true
	case float32:
		return NormalizeValue(float64(x))
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return nil, false
}
