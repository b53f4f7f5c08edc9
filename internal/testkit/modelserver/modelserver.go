// Package modelserver is a scripted OpenAI-compatible chat-completions
// server for tests: it answers each request with the next step of its
// script (streamed text, tool calls, a delay, an error), in the wire
// format the API uses, server-sent events included, and keeps every
// request Jarvis sent so that a test can assert what went out.
package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Step is one scripted answer.
type Step struct {
	// Text is the reply, streamed word by word.
	Text string
	// Calls are tool calls the reply makes.
	Calls []Call
	// Delay comes before the first byte of the answer; TextDelay between
	// streamed pieces of text.
	Delay, TextDelay time.Duration
	// Status, when set, answers with that HTTP error instead.
	Status int
	// PromptTokens, when set, is the usage reported for the prompt in
	// place of a quarter of the request's bytes.
	PromptTokens int
	// Arrived, when set, is closed when the request this step answers
	// arrives, before its Delay.
	Arrived chan struct{}
}

// Call is one scripted tool call.
type Call struct {
	Name string
	// Args is the arguments' JSON.
	Args string
}

// Request is what Jarvis sent.
type Request struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	Messages []Message       `json:"messages"`
	Tools    []Tool          `json:"tools"`
	Auth     string          `json:"-"`
	Raw      string          `json:"-"`
	Options  json.RawMessage `json:"stream_options"`
}

// Message is one message of a request.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Text is the message's content as text.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Tool is one tool a request offered.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

// Server is the scripted server; URL + "/v1" is its base URL.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Step
	requests []Request
	// Fallback answers when the script is used up.
	fallback Step
}

// New starts a server with a script; Close stops it.
func New(steps ...Step) *Server {
	s := &Server{script: steps, fallback: Step{Text: "(the script is used up)"}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is what model.base_url names.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Script replaces what is left of the script.
func (s *Server) Script(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = steps
}

// Fallback sets the answer once the script is used up.
func (s *Server) Fallback(step Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = step
}

// Requests are the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) next() Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) == 0 {
		return s.fallback
	}
	step := s.script[0]
	s.script = s.script[1:]
	return step
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var raw strings.Builder
	var req Request
	if err := json.NewDecoder(io.TeeReader(r.Body, &raw)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	req.Auth, req.Raw = r.Header.Get("Authorization"), raw.String()
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	step := s.next()
	if step.Arrived != nil {
		close(step.Arrived)
	}
	if !wait(r, step.Delay) {
		return
	}
	if step.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(step.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure","type":"server_error"}}`)
		return
	}
	usage := map[string]int{"prompt_tokens": len(req.Raw) / 4, "completion_tokens": 1 + len(step.Text)/4}
	for _, c := range step.Calls {
		usage["completion_tokens"] += len(c.Args) / 4
	}
	if step.PromptTokens > 0 {
		usage["prompt_tokens"] = step.PromptTokens
	}
	usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
	if !req.Stream {
		s.answer(w, req, step, usage)
		return
	}
	s.stream(w, r, req, step, usage)
}

func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// answer is a whole completion, unstreamed.
func (s *Server) answer(w http.ResponseWriter, req Request, step Step, usage map[string]int) {
	msg := map[string]any{"role": "assistant", "content": step.Text}
	finish := "stop"
	if len(step.Calls) > 0 {
		var calls []map[string]any
		for i, c := range step.Calls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"], finish = calls, "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
}

// stream is the same as server-sent events: a role chunk, the text word by
// word, each tool call in two pieces, the finish, the usage, [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, step Step, usage map[string]int) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(delta map[string]any, finish any, u any) {
		chunk := map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if u != nil {
			chunk["choices"], chunk["usage"] = []any{}, u
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for i, word := range strings.SplitAfter(step.Text, " ") {
		if word == "" {
			continue
		}
		if i > 0 && !wait(r, step.TextDelay) {
			return
		}
		send(map[string]any{"content": word}, nil, nil)
	}
	for i, c := range step.Calls {
		half := len(c.Args) / 2
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d", i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args[:half]}}}}, nil, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c.Args[half:]}}}}, nil, nil)
	}
	finish := "stop"
	if len(step.Calls) > 0 {
		finish = "tool_calls"
	}
	send(map[string]any{}, finish, nil)
	send(nil, nil, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}
