// Package contract checks the API's tests against its OpenAPI document:
// every request a test sends and every answer it gets. A request the
// document takes must be answered as the document says; a request it
// refuses (a test trying a bad body) must be refused with a 4xx problem;
// every refusal is application/problem+json. A mismatch fails the test.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// routers caches the router of each document, by its text.
var cache sync.Map

func init() {
	// The calendar feed is text; its content is the feed's own tests'.
	openapi3filter.RegisterBodyDecoder("text/calendar", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	})
}

// Router parses doc (the OpenAPI document as JSON), validates it, and
// returns its router.
func Router(doc []byte) (routers.Router, error) {
	if r, ok := cache.Load(string(doc)); ok {
		return r.(routers.Router), nil
	}
	t, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if !t.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("the document is OpenAPI %s, not 3.1", t.OpenAPI)
	}
	r, err := legacy.NewRouter(t)
	if err != nil {
		return nil, err
	}
	cache.Store(string(doc), r)
	return r, nil
}

// Handler wraps h so that every request it serves and its answer are
// checked against doc; a mismatch is reported with t.Errorf.
func Handler(t testing.TB, doc []byte, h http.Handler) http.Handler {
	router, err := Router(doc)
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if err := Exchange(router, r.Clone(r.Context()), body, rec.Result()); err != nil {
			t.Errorf("%s %s against the OpenAPI document: %v", r.Method, r.URL.Path, err)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// Transport wraps base (nil: http.DefaultTransport) so that every request
// sent through it and its answer are checked against doc; a mismatch is
// reported with t.Errorf.
func Transport(t testing.TB, doc []byte, base http.RoundTripper) http.RoundTripper {
	router, err := Router(doc)
	if err != nil {
		t.Fatal(err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := base.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(answer))
		checked := *resp
		checked.Body = io.NopCloser(bytes.NewReader(answer))
		if err := Exchange(router, r, body, &checked); err != nil {
			t.Errorf("%s %s against the OpenAPI document: %v", r.Method, r.URL.Path, err)
		}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Exchange checks one request (with its body) and the answer it got
// against the document's router.
func Exchange(router routers.Router, r *http.Request, body []byte, resp *http.Response) error {
	answer, _ := io.ReadAll(resp.Body)
	refused := resp.StatusCode >= 400
	r.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) > 0 && r.Header.Get("Content-Type") == "" {
		// The API reads every body as JSON, whatever it is labelled.
		r.Header.Set("Content-Type", "application/json")
	}
	route, params, err := router.FindRoute(r)
	// A refusal is a problem, unless the operation documents that status
	// with a body of its own (/healthz's 503).
	if refused && (err != nil || route.Operation.Responses.Status(resp.StatusCode) == nil) {
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/problem+json" {
			return fmt.Errorf("answered %d as %q, not application/problem+json: %s", resp.StatusCode, mt, answer)
		}
	}
	if err != nil {
		// A route the document does not have: a test's own route, or a
		// request for one that does not exist, answered 404 or 405.
		return nil
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		if !refused || resp.StatusCode >= 500 {
			return fmt.Errorf("the request does not fit the document (%v) and was answered %d, not refused: %s",
				err, resp.StatusCode, answer)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(answer)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("the answer does not fit the document: %v\n%d %s", err, resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	if extra := undocumentedMembers(route.Operation, resp, answer); len(extra) > 0 {
		return fmt.Errorf("the answer has members the document does not name: %s\n%d %s", strings.Join(extra, ", "),
			resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	return nil
}

// undocumentedMembers lists the members of a JSON answer that its
// schema does not name, so that a handler cannot add to its answer
// without the document saying so. A schema that names no members (a
// free-form object) takes any.
func undocumentedMembers(op *openapi3.Operation, resp *http.Response, answer []byte) []string {
	ref := op.Responses.Status(resp.StatusCode)
	if ref == nil {
		ref = op.Responses.Default()
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ref == nil || ref.Value == nil || ref.Value.Content.Get(mt) == nil || ref.Value.Content.Get(mt).Schema == nil {
		return nil
	}
	var v any
	if json.Unmarshal(answer, &v) != nil {
		return nil
	}
	var extra []string
	walkMembers("", ref.Value.Content.Get(mt).Schema.Value, v, &extra)
	return extra
}

// walkMembers adds to extra the paths of v's members that s does not
// name.
func walkMembers(path string, s *openapi3.Schema, v any, extra *[]string) {
	if s == nil {
		return
	}
	switch v := v.(type) {
	case []any:
		if s.Items != nil {
			for i, item := range v {
				walkMembers(fmt.Sprintf("%s[%d]", path, i), s.Items.Value, item, extra)
			}
		}
	case map[string]any:
		props := map[string]*openapi3.Schema{}
		for _, sub := range append(append(openapi3.SchemaRefs{{Value: s}}, s.AllOf...), s.OneOf...) {
			if sub.Value == nil {
				continue
			}
			for name, p := range sub.Value.Properties {
				props[name] = p.Value
			}
		}
		if len(props) == 0 {
			return
		}
		for name, member := range v {
			p, ok := props[name]
			if !ok {
				*extra = append(*extra, strings.TrimPrefix(path+"."+name, "."))
				continue
			}
			walkMembers(strings.TrimPrefix(path+"."+name, "."), p, member, extra)
		}
	}
}
