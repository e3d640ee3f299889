// Package probe is idemctl probe: it checks a deployed API against the
// idempotency contract its spec promises, through the real network path
// (gateways, proxies, routers), one marked operation at a time.
//
// For every x-idempotent operation (resolved by internal/load, exactly as
// idemgen resolves them) it sends: a request without a key (400
// missing-key where the key is required); a first request with a fresh
// key; the same request again (the same status, body and replayed
// headers, Idempotent-Replayed: true); the same key with another body
// (422 fingerprint-mismatch); N requests at once with one fresh key (one
// run: the rest 409 with Retry-After, or replays); where the key is in the
// body, another body key (runs anew); and where the operation declares a
// credential, the same key from a second caller (not the first caller's
// replay). Requests come from the spec's examples or an examples file; an
// operation with neither is listed as not probed, never guessed. Marked
// webhooks and callbacks get the same checks at the URLs where the
// deployment receives them (Config.Events, Config.EventsBase), which the
// spec does not give; without one each is listed as not probed. Their
// deliveries are signed (Config.Sign) for receivers that check a signature
// before the layer; an operation whose first request is refused (401, 403)
// is listed as not probed, never judged by its refusals.
//
// The probe sends real requests: every probed operation runs on the
// target, several times, and creates what it creates there. The command
// sends nothing without -yes.
package probe

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemgen/idemgen/internal/cmdline"
	"github.com/idemgen/idemgen/internal/model"
)

// Exit codes of Run.
const (
	ExitOK     = cmdline.ExitOK    // every check passed (or was not probed)
	ExitBroken = 1                 // a check failed: the deployment breaks the contract
	ExitUsage  = cmdline.ExitUsage // bad flags, or a spec idemgen refuses
)

// Warning is what Run prints before it sends anything.
const Warning = "idemctl probe sends REAL requests to %s: each probed operation runs there up to %d times and creates real resources (orders, payments, ...). Point it at a staging deployment with test credentials, never at production data.\n"

const usage = `usage: idemctl probe -spec openapi.yaml [-config cfg.yaml | -overlay overlay.yaml]
                     -url https://staging.example.com [-header 'Name: value']...
                     [-other-header 'Name: value']... [-examples file.yaml]
                     [-event name=URL]... [-events-url URL]
                     [-sign-secret whsec_... [-sign standard-webhooks|stripe|github]]
                     [-op operationId]... [-n 8] [-timeout 30s] -yes | -dry-run

probe checks a deployed API against the idempotency contract of its spec.
It SENDS REAL REQUESTS: every probed operation runs on the target several
times (6 + -n) and creates real resources there. Use staging and test
credentials. Without -yes it only says what it would run where, and sends
nothing; -dry-run lists every request without sending any.

For every x-idempotent operation (as idemgen reads the spec, through the
same oapi-codegen config or overlay) it checks: a request without a key
is 400 missing-key (where the key is required); a first request with a
fresh key is the operation's answer; the same request again is its replay
(same status, body and headers, Idempotent-Replayed: true); the same key
with another body is 422 fingerprint-mismatch; -n requests at once with
one key run once (the rest 409 with Retry-After, or replays); a body key
(x-idempotent key.body) is read from the body; and, with -other-header,
a second caller's same key is not the first caller's replay (the scope).

Parameters and bodies come from the spec's examples, or from -examples, a
YAML or JSON file by operationId:

  createPet:
    path: {petId: 1}
    query: {dryRun: false}
    header: {X-Account-Id: acct-1}
    body: {name: Rex, species: dog}

An operation with neither is listed as not probed, never guessed.

Marked webhooks and callbacks (x-idempotent under webhooks: or on a
callback) get the same checks at the URL where the deployment receives
them, which the spec does not say: -event orderPaid=https://.../hooks/paid
names one, -events-url https://.../hooks receives each at .../hooks/<its
name in the spec>. Without either, each is listed as not probed.

A receiver that checks signatures before the idempotency layer (as
docs/webhooks.md says it should) refuses unsigned deliveries: give its
secret with -sign-secret (env:NAME reads it from $NAME) and, when it is
not Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature),
-sign stripe (Stripe-Signature) or -sign github (X-Hub-Signature-256).
An operation whose first request is refused (401 or 403) is listed as
not probed, with what to give, never judged by what a refusal looks like.

The
exit code is 0 when no check failed, 1 when one did (the table names it),
2 for bad flags or a spec idemgen refuses.

`

// Config is one probe run.
type Config struct {
	Spec, CodegenConfig, Overlay string
	Examples                     string   // the examples file, "" for none
	Operations                   []string // operationIds or Go names in scope; nil: all
	BaseURL                      *url.URL
	// Events are the receiver URLs of webhooks and callbacks, by their
	// name in the spec (under webhooks: or callbacks:), operationId or Go
	// name; EventsBase, when not nil, receives every other one at
	// EventsBase/<name>. A marked webhook or callback with neither is
	// listed as not probed: the spec does not say where it is received.
	Events        map[string]*url.URL
	EventsBase    *url.URL
	Header, Other http.Header // every request's; a second caller's (nil: no scope check)
	Concurrent    int
	Client        *http.Client
	// Sign signs the deliveries to webhook and callback receivers, whose
	// signature check refuses unsigned ones before the idempotency layer.
	Sign   Signing
	DryRun bool
}

// Probe runs the checks of c and returns the table's rows. In a dry run
// it writes the requests to list instead of sending them.
func Probe(ctx context.Context, c Config, list io.Writer) ([]Row, error) {
	planned, err := c.plan()
	if err != nil {
		return nil, err
	}
	p := &prober{header: c.Header, other: c.Other, concurrent: max(c.Concurrent, 2), client: c.Client, sign: c.Sign}
	if c.DryRun {
		p.dryRun = list
	}
	var rows []Row
	for _, t := range planned {
		if t.reason != "" {
			rows = append(rows, Row{Operation: t.name, Check: "not probed", Got: t.reason, Result: Skipped})
			continue
		}
		rows = append(rows, p.probe(ctx, t)...)
		if err := ctx.Err(); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// plan loads c's spec and returns the operations in scope, in the order
// they are probed, each with its request, or why it is not probed.
func (c Config) plan() ([]target, error) {
	if err := c.Sign.check(); err != nil {
		return nil, err
	}
	ops, doc, err := loadSpec(c.Spec, c.CodegenConfig, c.Overlay)
	if err != nil {
		return nil, err
	}
	given, err := readValues(c.Examples)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, name := range c.Operations {
		if !slices.ContainsFunc(ops, func(o model.Operation) bool { return named(o, name) }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("-op %s: no x-idempotent operation of that name in %s", strings.Join(unknown, ", "), c.Spec)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Events)) {
		if !slices.ContainsFunc(ops, func(o model.Operation) bool { return o.Event != nil && named(o, name) }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("-event %s: no x-idempotent webhook or callback of that name in %s", strings.Join(unknown, ", "), c.Spec)
	}
	var planned []target
	for _, op := range ops {
		if len(c.Operations) > 0 && !slices.ContainsFunc(c.Operations, func(name string) bool { return named(op, name) }) {
			continue
		}
		t := newTarget(op, doc, given)
		if t.reason == "" {
			t.at, t.reason = c.receivedAt(op, t.path)
		}
		planned = append(planned, t)
	}
	return planned, nil
}

// named reports whether name names op: its operationId, Go name, or a
// webhook's or callback's name in the spec.
func named(op model.Operation, name string) bool {
	return op.SpecID == name || op.GoName == name || op.Event != nil && op.Event.Name == name
}

// receivedAt is where op's requests go (path filled in): the base URL
// joined with path for a path operation; for a webhook or callback, its
// URL from c.Events or under c.EventsBase, else why it is not probed.
func (c Config) receivedAt(op model.Operation, path string) (*url.URL, string) {
	if op.Event == nil {
		return c.BaseURL.JoinPath(path), ""
	}
	for name, u := range c.Events {
		if named(op, name) {
			return u, ""
		}
	}
	if c.EventsBase != nil {
		return c.EventsBase.JoinPath(op.Event.Name), ""
	}
	kind := strings.ToLower(string(op.Event.Kind))
	return nil, fmt.Sprintf("the %s %s is received at a URL of the receiver's, which the spec does not give: "+
		"give -event %s=URL, or -events-url with a base URL it is under by its name", kind, op.Event.Name, op.Event.Name)
}

// Run runs idemctl probe with args (after "probe") and returns the exit
// code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdline.FlagSet("idemctl probe", usage, stderr)
	var c Config
	var base string
	var headers, others, opsFlag, events listFlag
	var eventsBase string
	var timeout time.Duration
	fs.StringVar(&c.Spec, "spec", "", "the OpenAPI document (required)")
	fs.StringVar(&c.CodegenConfig, "config", "", "the oapi-codegen config idemgen ran with (its overlay and filters apply)")
	fs.StringVar(&c.Overlay, "overlay", "", "an OpenAPI Overlay that marks the spec (instead of the config's)")
	fs.StringVar(&base, "url", "", "base URL of the deployment (required), e.g. https://staging.example.com/v1")
	fs.Var(&headers, "header", "'Name: value' sent with every request, e.g. credentials (repeatable)")
	fs.Var(&others, "other-header", "'Name: value' of a second caller, for the scope check (repeatable)")
	fs.Var(&events, "event", "'name=URL': where the webhook or callback of that name (in the spec, or its operationId) is received (repeatable)")
	fs.StringVar(&eventsBase, "events-url", "", "base URL under which every other marked webhook and callback is received at <base>/<its name in the spec>")
	fs.StringVar(&c.Examples, "examples", "", "YAML or JSON file of parameters and bodies by operationId")
	fs.Var(&opsFlag, "op", "probe only this operation (operationId or Go name; repeatable)")
	fs.IntVar(&c.Concurrent, "n", 8, "requests sent at once with one key (at least 2)")
	fs.DurationVar(&timeout, "timeout", 30*time.Second, "timeout of each request")
	fs.StringVar(&c.Sign.Secret, "sign-secret", "", "sign deliveries to webhook and callback receivers with this secret (env:NAME reads it from $NAME)")
	fs.StringVar(&c.Sign.Scheme, "sign", "", "the signing scheme of -sign-secret: "+strings.Join(Schemes, ", ")+" (default "+StandardWebhooks+")")
	fs.BoolVar(&c.DryRun, "dry-run", false, "list the requests, send nothing")
	var yes bool
	fs.BoolVar(&yes, "yes", false, "send the requests: the target runs each probed operation several times")
	if code, done := cmdline.Parse(fs, args); done {
		return code
	}
	u, err := url.Parse(base)
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "idemctl probe: unexpected arguments %q\n", fs.Args())
		return ExitUsage
	case c.Spec == "" || base == "":
		fmt.Fprintln(stderr, "idemctl probe: -spec and -url are required (idemctl probe -h)")
		return ExitUsage
	case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		fmt.Fprintf(stderr, "idemctl probe: %v\n", badURL("-url", base))
		return ExitUsage
	case c.Concurrent < 2:
		fmt.Fprintln(stderr, "idemctl probe: -n must be at least 2")
		return ExitUsage
	}
	c.BaseURL, c.Operations = u, opsFlag
	if c.Header, err = headers.header(); err == nil && len(others) > 0 {
		c.Other, err = others.header()
	}
	if err == nil {
		c.Events, err = events.urls()
	}
	if err == nil && eventsBase != "" {
		c.EventsBase, err = httpURL("-events-url", eventsBase)
	}
	if name, ok := strings.CutPrefix(c.Sign.Secret, "env:"); ok && err == nil {
		if c.Sign.Secret = os.Getenv(name); c.Sign.Secret == "" {
			err = fmt.Errorf("-sign-secret env:%s: $%s is empty or not set", name, name)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "idemctl probe: %v\n", err)
		return ExitUsage
	}
	c.Client = &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	switch {
	case c.DryRun:
		fmt.Fprintf(stdout, "idemctl probe -dry-run: nothing is sent. Without -dry-run it "+strings.TrimPrefix(Warning, "idemctl probe "), u.Redacted(), 6+c.Concurrent)
	case !yes:
		return c.unconfirmed(stdout, stderr)
	default:
		fmt.Fprintf(stdout, Warning, u.Redacted(), 6+c.Concurrent)
	}
	rows, err := Probe(ctx, c, stdout)
	if err != nil && rows == nil {
		fmt.Fprint(stderr, cmdline.Message("idemctl probe: ", err))
		return ExitUsage
	}
	writeTable(stdout, rows)
	if err != nil {
		fmt.Fprintf(stderr, "idemctl probe: %v\n", err)
		return ExitBroken
	}
	var broken []string
	for _, r := range rows {
		if r.Result == Fail {
			broken = append(broken, r.Operation+": "+r.Check)
		}
	}
	if len(broken) > 0 {
		fmt.Fprintf(stdout, "\nBROKEN: %d check(s) failed: %s\n", len(broken), strings.Join(broken, "; "))
		return ExitBroken
	}
	if !c.DryRun {
		fmt.Fprintln(stdout, "\n"+verdict(rows))
	}
	return ExitOK
}

// unconfirmed is Run without -yes or -dry-run: it says what the probe
// would run where, sends nothing, and returns ExitUsage.
func (c Config) unconfirmed(stdout, stderr io.Writer) int {
	planned, err := c.plan()
	if err != nil {
		fmt.Fprint(stderr, cmdline.Message("idemctl probe: ", err))
		return ExitUsage
	}
	fmt.Fprintf(stdout, Warning, c.BaseURL.Redacted(), 6+c.Concurrent)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nIt would run these operations there, each up to", 6+c.Concurrent, "times:")
	n := 0
	for _, t := range planned {
		if t.reason == "" {
			n++
			fmt.Fprintf(tw, "  %s\t%s %s\n", t.name, t.op.Method, t.at.Redacted())
		}
	}
	tw.Flush()
	if n == 0 {
		fmt.Fprintln(stdout, "  none: every operation in scope is not probed (-dry-run says why)")
	}
	fmt.Fprintln(stderr, "idemctl probe: nothing was sent: pass -yes to send these requests, or -dry-run to list each of them")
	return ExitUsage
}

// verdict is the last line of a run in which no check failed: it does not
// call a run that probed nothing a pass.
func verdict(rows []Row) string {
	var probed, skipped []string
	for _, r := range rows {
		if r.Check == "not probed" {
			skipped = append(skipped, r.Operation)
		} else if !slices.Contains(probed, r.Operation) {
			probed = append(probed, r.Operation)
		}
	}
	switch {
	case len(probed) == 0:
		return "nothing probed: no operation could be probed (the table says why for each)"
	case len(skipped) > 0:
		return fmt.Sprintf("ok: the deployment keeps the contract for the %d probed operation(s); %d not probed: %s", len(probed), len(skipped), strings.Join(skipped, ", "))
	}
	return "ok: the deployment keeps the contract for every probed operation"
}

// writeTable prints rows as a table.
func writeTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nOPERATION\tCHECK\tEXPECTED\tGOT\tRESULT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Operation, r.Check, r.Expected, r.Got, r.Result)
	}
	tw.Flush()
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// urls parses 'name=URL' entries.
func (l listFlag) urls() (map[string]*url.URL, error) {
	out := map[string]*url.URL{}
	for _, e := range l {
		name, raw, ok := strings.Cut(e, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("-event %q: want 'name=URL', the webhook's or callback's name and where it is received", e)
		}
		u, err := httpURL("-event "+name, strings.TrimSpace(raw))
		if err != nil {
			return nil, err
		}
		out[strings.TrimSpace(name)] = u
	}
	return out, nil
}

// httpURL parses raw, the value of flag, as an http or https URL.
func httpURL(flag, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, badURL(flag, raw)
	}
	return u, nil
}

func badURL(flag, raw string) error {
	return fmt.Errorf("%s %q: want an http or https URL such as https://staging.example.com", flag, raw)
}

// header parses 'Name: value' entries.
func (l listFlag) header() (http.Header, error) {
	h := http.Header{}
	for _, e := range l {
		name, value, ok := strings.Cut(e, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("header %q: want 'Name: value'", e)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return h, nil
}
