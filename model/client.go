package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/jarvis-hmi/jarvis/core/converse"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// Meter keeps Jarvis's own model spend per UTC day, in the table that
// keeps the agents' (store.MeterQuery), under keys no agent can have.
type Meter interface {
	AddSpend(ctx context.Context, agent, day string, s fleet.Spend) (fleet.DaySpend, error)
	SpendOn(ctx context.Context, agent, day string) (fleet.DaySpend, error)
	MarkSpend(ctx context.Context, agent, day string, warned, alerted bool) error
}

// The spend keys: the workspace's day, each model's and each person's.
// Agent names never hold a space.
const spendKey = "jarvis model"

func modelSpendKey(model string) string   { return spendKey + " " + model }
func personSpendKey(person string) string { return spendKey + " for " + person }

// warnShare of a daily budget draws the warning.
const warnShare = 0.8

// Client talks to an OpenAI-compatible chat-completions API.
type Client struct {
	cfg     Config
	persona Persona
	chat    openai.ChatCompletionService
	meter   Meter
	now     func() time.Time
	// announce, when set, tells the room that the workspace's budget
	// passed its warning share or is spent.
	announce func(ctx context.Context, key, text string)
}

var _ converse.Model = (*Client)(nil)

// AnnounceBudget has fn tell the room, once a day each, that the
// workspace's daily budget passed its warning share and that it is
// spent; key is stable for the day and the share.
func (c *Client) AnnounceBudget(fn func(ctx context.Context, key, text string)) { c.announce = fn }

// New builds a client. The API key is read once, here, from its file or
// environment variable; the environment's OPENAI_* variables are not read.
func New(cfg Config, persona Persona, meter Meter, now func() time.Time) (*Client, error) {
	key, err := cfg.APIKey()
	if err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithBaseURL(strings.TrimSuffix(cfg.BaseURL, "/") + "/"),
		option.WithHTTPClient(&http.Client{}),
		// A turn has one deadline (model.timeout); the grammar answers
		// rather than a retry.
		option.WithMaxRetries(0),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	return &Client{cfg: cfg, persona: persona, chat: openai.NewChatCompletionService(opts...), meter: meter, now: now}, nil
}

// Persona is the persona the client converses as.
func (c *Client) Persona() Persona { return c.persona }

// Converse answers a turn: it streams the model's reply, runs the tools
// it calls and hands their results back, for at most model.max_rounds
// rounds, all within model.timeout. A slow, unreachable or over-budget
// model is an error wrapping converse.ErrSlow, ErrDown or ErrOverBudget.
func (c *Client) Converse(ctx context.Context, req converse.Request) (reply converse.Reply, err error) {
	start := time.Now()
	day := c.now().UTC().Format(time.DateOnly)
	if err := c.checkBudget(ctx, req.Person, day); err != nil {
		return converse.Reply{}, err
	}
	turnCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	reply.Model = c.cfg.Name
	defer func() {
		// What was used is metered whether or not the turn finished.
		c.meterTurn(ctx, req.Person, day, &reply)
	}()
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(systemPrompt(c.persona, req.Tools)),
		openai.UserMessage(turnText(req)),
	}
	tools := toolParams(req.Tools)
	byName := map[string]converse.Tool{}
	for _, t := range req.Tools {
		byName[t.Name] = t
	}
	for round := 0; ; round++ {
		params := openai.ChatCompletionNewParams{
			Model:         shared.ChatModel(c.cfg.Name),
			Messages:      msgs,
			MaxTokens:     openai.Int(c.cfg.MaxReplyTokens),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		}
		// The last round offers no tools: the model answers in words.
		if len(tools) > 0 && round < c.cfg.MaxRounds {
			params.Tools = tools
		}
		res, err := c.stream(turnCtx, params, req.Progress, start, &reply)
		if err != nil {
			return reply, c.failure(ctx, turnCtx, err)
		}
		if len(res.calls) == 0 || params.Tools == nil {
			reply.Text = strings.TrimSpace(res.text)
			break
		}
		assistant := openai.ChatCompletionAssistantMessageParam{}
		if res.text != "" {
			assistant.Content.OfString = openai.String(res.text)
		}
		for _, call := range res.calls {
			assistant.ToolCalls = append(assistant.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: call.id,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: call.name, Arguments: call.args}}})
		}
		msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &assistant})
		for _, call := range res.calls {
			out, err := runTool(turnCtx, byName, call)
			if err != nil {
				return reply, err
			}
			msgs = append(msgs, openai.ToolMessage(out, call.id))
		}
	}
	reply.Full = time.Since(start)
	metrics.ModelReply.Observe(reply.Full.Seconds())
	return reply, nil
}

// failure says why a turn failed: past its deadline (slow), or the API's
// error (down); the caller's own cancellation as it is.
func (c *Client) failure(ctx, turnCtx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(turnCtx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w (model.timeout, %s)", converse.ErrSlow, c.cfg.Timeout)
	}
	return fmt.Errorf("%w: %w", converse.ErrDown, err)
}

// toolCall is one call the model asked for.
type toolCall struct{ id, name, args string }

// round is one completion: its text and the tools it called.
type round struct {
	text  string
	calls []toolCall
}

// stream runs one streamed completion, telling progress the text so far
// and adding its usage to the reply.
func (c *Client) stream(ctx context.Context, params openai.ChatCompletionNewParams, progress func(string), start time.Time,
	reply *converse.Reply) (round, error) {
	s := c.chat.NewStreaming(ctx, params)
	defer s.Close()
	var r round
	var text strings.Builder
	byIndex := map[int64]*toolCall{}
	var order []int64
	for s.Next() {
		chunk := s.Current()
		if chunk.JSON.Usage.Valid() {
			c.addUsage(reply, chunk.Usage)
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue
			}
			if d := choice.Delta.Content; d != "" {
				if reply.FirstToken == 0 {
					reply.FirstToken = time.Since(start)
					metrics.ModelFirstToken.Observe(reply.FirstToken.Seconds())
				}
				text.WriteString(d)
				if progress != nil {
					progress(text.String())
				}
			}
			for _, tc := range choice.Delta.ToolCalls {
				call, ok := byIndex[tc.Index]
				if !ok {
					call = &toolCall{}
					byIndex[tc.Index] = call
					order = append(order, tc.Index)
				}
				if tc.ID != "" {
					call.id = tc.ID
				}
				call.name += tc.Function.Name
				call.args += tc.Function.Arguments
			}
		}
	}
	if err := s.Err(); err != nil {
		return r, err
	}
	r.text = text.String()
	for _, i := range order {
		call := byIndex[i]
		if call.id == "" {
			call.id = fmt.Sprintf("call_%d", i)
		}
		r.calls = append(r.calls, *call)
	}
	return r, nil
}

// addUsage adds one completion's tokens, and their price, to the reply.
func (c *Client) addUsage(reply *converse.Reply, u openai.CompletionUsage) {
	price := c.cfg.price(c.cfg.Name)
	reply.TokensIn += u.PromptTokens
	reply.TokensOut += u.CompletionTokens
	cost := (float64(u.PromptTokens)*price.Input + float64(u.CompletionTokens)*price.Output) / 1e6
	reply.Cost += cost
	reply.Currency = price.Currency
	metrics.ModelTokens.WithLabelValues(c.cfg.Name, "in").Add(float64(u.PromptTokens))
	metrics.ModelTokens.WithLabelValues(c.cfg.Name, "out").Add(float64(u.CompletionTokens))
	metrics.ModelCost.WithLabelValues(c.cfg.Name).Add(cost)
}

// runTool runs one call; what the model got wrong goes back to it as the
// tool's result, so that it can correct itself.
func runTool(ctx context.Context, tools map[string]converse.Tool, call toolCall) (string, error) {
	t, ok := tools[call.name]
	if !ok {
		return frame(converse.Result{Data: map[string]string{"error": fmt.Sprintf("there is no tool %q", call.name)}, Source: "jarvis"}), nil
	}
	args := json.RawMessage(call.args)
	if strings.TrimSpace(call.args) == "" {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return frame(converse.Result{Data: map[string]string{"error": "the arguments are not valid JSON"}, Source: "jarvis"}), nil
	}
	res, err := t.Call(ctx, args)
	if err != nil {
		return "", fmt.Errorf("tool %s: %w", call.name, err)
	}
	return frame(res), nil
}

// checkBudget refuses a turn when today's workspace or person budget is
// spent.
func (c *Client) checkBudget(ctx context.Context, person, day string) error {
	b := c.cfg.Budget
	for _, check := range []struct {
		key, config string
		limit       int64
	}{{spendKey, "model.budget.workspace_tokens", b.WorkspaceTokens}, {personSpendKey(person), "model.budget.person_tokens", b.PersonTokens}} {
		if check.limit <= 0 {
			continue
		}
		spent, err := c.meter.SpendOn(ctx, check.key, day)
		if err != nil {
			return fmt.Errorf("%w: read the model's spend: %w", converse.ErrDown, err)
		}
		if spent.TokensIn+spent.TokensOut >= check.limit {
			return fmt.Errorf("%w (%s: %d tokens a day)", converse.ErrOverBudget, check.config, check.limit)
		}
	}
	return nil
}

// meterTurn adds the turn's tokens to the day's spend of the workspace,
// the model and the person, and sets the reply's warning when a budget
// passes its warning share (once a day) or is spent.
func (c *Client) meterTurn(ctx context.Context, person, day string, reply *converse.Reply) {
	if c.meter == nil || reply.TokensIn+reply.TokensOut == 0 {
		return
	}
	s := fleet.Spend{TokensIn: reply.TokensIn, TokensOut: reply.TokensOut, Cost: reply.Cost, Currency: reply.Currency}
	if _, err := c.meter.AddSpend(ctx, modelSpendKey(c.cfg.Name), day, s); err != nil {
		reply.Warning = "I could not record what this answer cost."
		return
	}
	b := c.cfg.Budget
	for _, m := range []struct {
		key, config, whose string
		limit              int64
	}{{spendKey, "model.budget.workspace_tokens", "the workspace's", b.WorkspaceTokens}, {personSpendKey(person), "model.budget.person_tokens", "your", b.PersonTokens}} {
		total, err := c.meter.AddSpend(ctx, m.key, day, s)
		if err != nil {
			reply.Warning = "I could not record what this answer cost."
			return
		}
		if m.limit <= 0 || reply.Warning != "" {
			continue
		}
		share := float64(total.TokensIn+total.TokensOut) / float64(m.limit)
		switch {
		case share >= 1 && !total.Alerted:
			reply.Warning = fmt.Sprintf("That used the rest of %s model budget for today (%s: %d tokens): until midnight UTC my grammar answers alone.",
				m.whose, m.config, m.limit)
			total.Warned, total.Alerted = true, true
		case share >= warnShare && !total.Warned:
			reply.Warning = fmt.Sprintf("%s model budget for today is %.0f %% used (%s: %d tokens); at 100 %% my grammar answers alone.",
				upperFirst(m.whose), share*100, m.config, m.limit)
			total.Warned = true
		default:
			continue
		}
		if err := c.meter.MarkSpend(ctx, m.key, day, total.Warned, total.Alerted); err != nil {
			reply.Warning = "I could not record what this answer cost."
			return
		}
		if m.key == spendKey && c.announce != nil {
			level, text := "warn", fmt.Sprintf("⚠️ My own language model has used %.0f %% of today's token budget (model.budget.workspace_tokens: %d).", share*100, m.limit)
			if total.Alerted {
				level, text = "spent", fmt.Sprintf("🚨 My own language model has used today's token budget (model.budget.workspace_tokens: %d): until midnight UTC my grammar answers alone.", m.limit)
			}
			c.announce(ctx, "model-budget:"+level+":"+day, text)
		}
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Status is today's spend of Jarvis's own model, as `!sys status` shows it.
func (c *Client) Status(ctx context.Context) ([]string, error) {
	day := c.now().UTC().Format(time.DateOnly)
	ws, err := c.meter.SpendOn(ctx, spendKey, day)
	if err != nil {
		return nil, err
	}
	m, err := c.meter.SpendOn(ctx, modelSpendKey(c.cfg.Name), day)
	if err != nil {
		return nil, err
	}
	used := ws.TokensIn + ws.TokensOut
	budget := "no daily budget (model.budget.workspace_tokens)"
	if b := c.cfg.Budget.WorkspaceTokens; b > 0 {
		budget = fmt.Sprintf("%.0f %% of the daily budget of %d tokens", float64(used)/float64(b)*100, b)
	}
	cost := "no price in model.prices"
	if p := c.cfg.price(c.cfg.Name); p.Currency != "" {
		cost = fmt.Sprintf("%.4f %s", m.Cost, p.Currency)
	}
	return []string{
		fmt.Sprintf("model `%s`, %s per turn", strings.ReplaceAll(c.cfg.Name, "`", "'"), c.cfg.Timeout),
		fmt.Sprintf("today: %d tokens in, %d out, %s", ws.TokensIn, ws.TokensOut, budget),
		fmt.Sprintf("today's cost of `%s`: %s", strings.ReplaceAll(c.cfg.Name, "`", "'"), cost),
	}, nil
}
