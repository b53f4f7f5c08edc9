package api

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"

	"github.com/jarvis-hmi/jarvis/core"
)

// MaxBodyBytes is the largest request body the API reads.
const MaxBodyBytes = 64 << 10

// WriteJSON writes v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// errEmptyBody is DecodeJSON's answer to a request without a body.
var errEmptyBody = core.Invalid("body", "is empty")

// DecodeOptionalJSON is DecodeJSON for a route whose body may be left out:
// an empty body leaves v as it is.
func DecodeOptionalJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if err := DecodeJSON(w, r, v); err != errEmptyBody {
		return err
	}
	return nil
}

// DecodeJSON reads a JSON body of at most MaxBodyBytes into v, refusing
// trailing data with an error that names what is wrong. Fields v does not
// name are ignored: an agent written for a newer Jarvis works with this one
// (the route's validation logs them).
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err := dec.Decode(v); err != nil {
		var maxErr *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		var netErr net.Error
		switch {
		case errors.As(err, &maxErr):
			return core.Invalid("body", "larger than %d bytes", MaxBodyBytes)
		case errors.As(err, &typeErr):
			return core.Invalid(typeErr.Field, "must be %s", jsonKind(typeErr.Type))
		case errors.As(err, &syntaxErr):
			return core.Invalid("body", "malformed JSON at byte %d", syntaxErr.Offset)
		case errors.As(err, &netErr) && netErr.Timeout():
			return core.Invalid("body", "not received within the read timeout")
		case errors.Is(err, io.EOF):
			return errEmptyBody
		default:
			return core.Invalid("body", "%v", err)
		}
	}
	if dec.More() {
		return core.Invalid("body", "trailing data after the JSON object")
	}
	return nil
}

// jsonKind names a Go type the way JSON does: a number, a string, a list.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value of the documented type"
}
