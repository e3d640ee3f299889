package probe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// Result says how a check went.
type Result string

// The results of a check.
const (
	Pass    Result = "ok"
	Fail    Result = "FAIL"
	Skipped Result = "skip" // not probed, or not conclusive; Got says why
)

// Row is one line of the probe's table.
type Row struct {
	Operation, Check, Expected, Got string
	Result                          Result
}

// prober sends the requests of one run.
type prober struct {
	header     http.Header // every request's (auth)
	other      http.Header // a second caller's, for the scope check; nil: none
	concurrent int
	client     *http.Client
	sign       Signing   // how deliveries to webhook and callback receivers are signed
	dryRun     io.Writer // non-nil: list the requests here instead of sending them
}

// answer is what the probe sees of a response.
type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// replayed reports whether a carries Idempotent-Replayed: true.
func (a answer) replayed() bool { return a.header.Get(idemop.HeaderReplayed) == "true" }

// code is the problem code of an application/problem+json answer, or "".
func (a answer) code() string {
	if !strings.HasPrefix(a.header.Get("Content-Type"), "application/problem+json") {
		return ""
	}
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(a.body, &p) // not a problem document: no code
	return p.Code
}

// keyLost reports whether a is the layer's answer to a request whose key
// it did not get (400 missing-key or invalid-key).
func (a answer) keyLost() bool {
	return a.status == http.StatusBadRequest && (a.code() == "missing-key" || a.code() == "invalid-key")
}

// String is a short account of a for the table.
func (a answer) String() string {
	switch {
	case a.err != nil:
		return "error: " + a.err.Error()
	case a.status == 0:
		return "(dry run)"
	}
	s := strconv.Itoa(a.status)
	if c := a.code(); c != "" {
		s += " " + c
	}
	if a.replayed() {
		s += ", replayed"
	}
	return s
}

// req is one request of a check: t's, with key placed where t's operation
// takes it ("" for none), body changed by change (when not nil) and the
// headers of as (the probe's own when nil).
type req struct {
	t      target
	key    string
	change func(body any, q url.Values) any
	as     http.Header
}

// send sends r, or lists it in a dry run.
func (p *prober) send(ctx context.Context, r req) answer {
	t := r.t
	body := clone(t.body)
	q := url.Values{}
	for k, v := range t.query {
		q[k] = slices.Clone(v)
	}
	if r.change != nil {
		body = r.change(body, q)
	}
	header := http.Header{}
	for k, v := range t.header {
		header.Set(k, v)
	}
	as := r.as
	if as == nil {
		as = p.header
	}
	for k, v := range as {
		header[k] = slices.Clone(v)
	}
	keyHeader := ""
	switch ptr := keyPointer(t.op); {
	case ptr != "":
		if m, ok := body.(map[string]any); ok {
			body = setPointer(m, ptr, r.key)
		}
	default:
		keyHeader = t.op.KeyHeader
		if keyHeader == "" {
			keyHeader = idemop.DefaultKeyHeader
		}
		if r.key != "" {
			header.Set(keyHeader, r.key)
		}
	}
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body) // decoded JSON marshals
		header.Set("Content-Type", "application/json")
	}
	if t.op.Event != nil && p.sign.on() {
		p.sign.sign(header, keyHeader, raw, time.Now())
	}
	at := *t.at
	at.RawQuery = q.Encode()
	u := &at
	if p.dryRun != nil {
		fmt.Fprintf(p.dryRun, "  %s %s", t.op.Method, u)
		for _, k := range sortedKeys(header) {
			fmt.Fprintf(p.dryRun, "\n    %s: %s", k, strings.Join(header[k], ", "))
		}
		if raw != nil {
			fmt.Fprintf(p.dryRun, "\n    %s", raw)
		}
		fmt.Fprintln(p.dryRun)
		return answer{header: http.Header{}}
	}
	hr, err := http.NewRequestWithContext(ctx, t.op.Method, u.String(), bytes.NewReader(raw))
	if err != nil {
		return answer{err: err}
	}
	hr.Header = header
	resp, err := p.client.Do(hr)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// probe runs every check of t and returns its rows.
func (p *prober) probe(ctx context.Context, t target) []Row {
	var rows []Row
	row := func(check, expected string, got answer, ok bool, why string) {
		r := Row{Operation: t.name, Check: check, Expected: expected, Got: got.String(), Result: Pass}
		if why != "" {
			r.Got += ": " + why
		}
		switch {
		case p.dryRun != nil:
			r.Result, r.Got = Skipped, "(dry run)"
		case !ok:
			r.Result = Fail
		}
		rows = append(rows, r)
	}
	note := func(check string) {
		if p.dryRun != nil {
			fmt.Fprintf(p.dryRun, "%s: %s\n", t.name, check)
		}
	}
	policy := idemop.Operation{Final: t.op.Final, Transient: t.op.Transient}

	var missing answer
	if !t.op.Optional {
		note("missing key")
		missing = p.send(ctx, req{t: t})
	}
	k1 := freshKey()
	note("first request")
	first := p.send(ctx, req{t: t, key: k1})
	if first.refused() {
		// Nothing ran: what comes back says nothing about the contract.
		return []Row{{Operation: t.name, Check: "not probed", Got: p.refusal(t, first), Result: Skipped}}
	}
	if !t.op.Optional {
		if missing.refused() {
			rows = append(rows, Row{Operation: t.name, Check: "missing key", Expected: "400 missing-key", Result: Skipped,
				Got: missing.String() + ": not conclusive, the target refused the request without a key before the idempotency layer could answer it"})
		} else {
			row("missing key", "400 missing-key", missing, missing.err == nil && missing.status == http.StatusBadRequest && missing.code() == "missing-key", "")
		}
	}
	layer := first.keyLost()
	row("first request", "the operation's answer, not replayed", first,
		first.err == nil && !first.replayed() && !layer, map[bool]string{true: "the key did not reach the idempotency layer"}[layer])
	// What the contract promises from here on: a replay, unless the
	// operation's policy does not keep the first answer. A key that never
	// arrived is judged by the promise, not by what came back.
	stored := layer || first.err == nil && policy.Stores(first.status)

	note("replay")
	again := p.send(ctx, req{t: t, key: k1})
	if stored || p.dryRun != nil {
		why := sameAnswer(first, again)
		row("replay", "the same status, body and headers, Idempotent-Replayed: true", again, why == "", why)
	} else {
		row("replay", fmt.Sprintf("runs again (%d is not final)", first.status), again, again.err == nil && !again.replayed(), "")
	}

	note("same key, another request")
	other := p.send(ctx, req{t: t, key: k1, change: differ})
	if stored || p.dryRun != nil {
		row("same key, another request", "422 fingerprint-mismatch", other,
			other.err == nil && other.status == http.StatusUnprocessableEntity && other.code() == "fingerprint-mismatch", "")
	} else {
		row("same key, another request", "runs (nothing stored for the key)", other, other.err == nil && other.status != http.StatusUnprocessableEntity, "")
	}

	note(fmt.Sprintf("%d concurrent requests, one key", p.concurrent))
	rows = append(rows, p.concurrently(ctx, t, policy))

	if ptr := keyPointer(t.op); ptr != "" {
		note("body key")
		a := p.send(ctx, req{t: t, key: freshKey()})
		row("body key", "another key at "+ptr+" runs anew", a,
			a.err == nil && !a.replayed() && a.status != http.StatusUnprocessableEntity && a.code() != "missing-key", "")
	}
	if scope := scopeHeaders(t); scope != "" {
		if p.other == nil {
			rows = append(rows, Row{Operation: t.name, Check: "scope", Expected: "another caller's same key is not the first caller's replay",
				Got: "not probed: give -other-header with a second caller's " + scope, Result: Skipped})
		} else {
			note("scope")
			a := p.send(ctx, req{t: t, key: k1, as: p.other})
			row("scope", "another caller ("+scope+") with the same key runs anew", a,
				a.err == nil && !a.replayed() && a.status != http.StatusUnprocessableEntity, "")
		}
	}
	return rows
}

// refusal says why t is not probed when the target refused its first
// request (a, 401 or 403) and what to give the probe.
func (p *prober) refusal(t target, a answer) string {
	switch {
	case t.op.Event == nil:
		return fmt.Sprintf("the target refused the request (%s): give the credentials it wants with -header", a)
	case p.sign.on():
		return fmt.Sprintf("the receiver refused the signed delivery (%s): check -sign-secret and -sign (%s)", a, strings.Join(Schemes, ", "))
	}
	return fmt.Sprintf("the receiver refused the delivery (%s): sign it with -sign-secret whsec_... (Standard Webhooks), or -sign stripe|github -sign-secret ...", a)
}

// concurrently sends p.concurrent requests with one fresh key at once and
// tells one run from several by what comes back: every answer but the 409s
// is the same status and body, and at most one is not a replay; every 409 is
// a conflict with Retry-After.
func (p *prober) concurrently(ctx context.Context, t target, policy idemop.Operation) Row {
	check := fmt.Sprintf("%d concurrent, one key", p.concurrent)
	r := Row{Operation: t.name, Check: check, Expected: "one run: the rest 409 with Retry-After, or replays", Result: Pass}
	key := freshKey()
	if p.dryRun != nil {
		p.send(ctx, req{t: t, key: key})
		r.Result, r.Got = Skipped, "(dry run)"
		return r
	}
	answers := make([]answer, p.concurrent)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			<-start
			answers[i] = p.send(ctx, req{t: t, key: key})
		})
	}
	close(start)
	wg.Wait()
	var runs, replays, conflicts int
	var ran *answer
	var problems []string
	for i, a := range answers {
		switch {
		case a.err != nil:
			problems = append(problems, "error: "+a.err.Error())
		case a.refused(): // not a run: refused before anything ran
			problems = append(problems, "refused: "+a.String())
		case a.status == http.StatusConflict && a.code() == "conflict":
			conflicts++
			if n, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || n < 1 {
				problems = append(problems, "a 409 without Retry-After")
			}
		default:
			if a.replayed() {
				replays++
			} else {
				runs++
			}
			if ran == nil {
				ran = &answers[i]
			} else if why := sameAnswer(*ran, markReplay(a)); why != "" {
				problems = append(problems, why)
			}
		}
	}
	r.Got = fmt.Sprintf("%d run(s), %d replay(s), %d conflict(s)", runs, replays, conflicts)
	switch {
	case ran != nil && ran.keyLost():
		problems = append(problems, "the key did not reach the idempotency layer")
	case ran != nil && !policy.Stores(ran.status):
		r.Result, r.Got = Skipped, r.Got+": not conclusive, "+strconv.Itoa(ran.status)+" is not final"
	case runs > 1:
		problems = append(problems, fmt.Sprintf("the operation ran %d times", runs))
	case runs == 0 && replays > 0:
		problems = append(problems, "no answer is the run's own")
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		r.Result, r.Got = Fail, r.Got+": "+strings.Join(slices.Compact(problems), "; ")
	}
	return r
}

// replayedHeaders are the headers a replay carries as the first answer had
// them (the runtime's default allow-list).
var replayedHeaders = []string{"Content-Type", "Content-Language", "Location", "ETag", "Link"}

// sameAnswer says how again, meant to be the replay of first, differs from
// it; "" when it does not.
func sameAnswer(first, again answer) string {
	switch {
	case again.err != nil:
		return ""
	case !again.replayed():
		return "no Idempotent-Replayed: true"
	case again.status != first.status:
		return fmt.Sprintf("status %d, the first answer was %d", again.status, first.status)
	case !bytes.Equal(again.body, first.body):
		return "another body than the first answer's"
	}
	for _, h := range replayedHeaders {
		if want := first.header.Get(h); want != "" && again.header.Get(h) != want {
			return fmt.Sprintf("%s %q, the first answer had %q", h, again.header.Get(h), want)
		}
	}
	return ""
}

// markReplay returns a as if it were marked replayed, for comparing the
// run's own answer with its replays.
func markReplay(a answer) answer {
	h := a.header.Clone()
	h.Set(idemop.HeaderReplayed, "true")
	a.header = h
	return a
}

// differ changes a request so that its fingerprint differs: a member added
// to a JSON object body, else a query parameter.
func differ(body any, q url.Values) any {
	if m, ok := body.(map[string]any); ok {
		m["idemctl_probe"] = freshKey()
		return m
	}
	q.Set("idemctl_probe", freshKey())
	return body
}

// scopeHeaders names the credentials t's operation declares in headers
// (the scope of its keys), "" when it declares none.
func scopeHeaders(t target) string {
	var names []string
	for _, s := range t.op.Security {
		switch {
		case s.Type == "apiKey" && s.In == "header":
			names = append(names, s.Name)
		case s.Type == "http" || s.Type == "oauth2" || s.Type == "openIdConnect":
			names = append(names, "Authorization")
		}
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ", ")
}

// freshKey is a key no earlier request used.
func freshKey() string { return "idemctl-probe-" + rand.Text() }

// setPointer sets the string member of m at the JSON Pointer ptr to key
// (removing it when key is ""), creating the objects on its way.
func setPointer(m map[string]any, ptr, key string) any {
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := m
	for i, tok := range toks {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if i == len(toks)-1 {
			if key == "" {
				delete(cur, tok)
			} else {
				cur[tok] = key
			}
			break
		}
		next, ok := cur[tok].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[tok] = next
		}
		cur = next
	}
	return m
}

// clone deep-copies a decoded JSON value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
