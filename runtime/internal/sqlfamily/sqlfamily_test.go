package sqlfamily

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

func TestDurationRoundsUpToMilliseconds(t *testing.T) {
	for _, tc := range []struct {
		d      time.Duration
		ms, us int64
	}{
		{0, 5000, 5_000_000}, // the default
		{time.Nanosecond, 1, 1000},
		{time.Millisecond, 1, 1000},
		{1500 * time.Microsecond, 2, 2000},
	} {
		ms, err := DurationMS("lease", tc.d, 5*time.Second)
		if err != nil || ms != tc.ms {
			t.Errorf("DurationMS(%v) = %d, %v; want %d", tc.d, ms, err, tc.ms)
		}
		us, err := (&Dialect{Unit: time.Microsecond}).Duration("lease", tc.d, 5*time.Second)
		if err != nil || us != tc.us {
			t.Errorf("Duration in microseconds (%v) = %d, %v; want %d", tc.d, us, err, tc.us)
		}
	}
	if _, err := DurationMS("lease", -time.Second, time.Second); err == nil || !strings.Contains(err.Error(), "negative lease") {
		t.Errorf("a negative lease: %v", err)
	}
}

func TestOptionsKeepTheirDefaults(t *testing.T) {
	o := DefaultOptions()
	o.SetAbandonedTTL(-1)
	o.SetPurgeInterval(0)
	o.SetPurgeBatch(0)
	o.SetReadLanes(0)
	if o != DefaultOptions() {
		t.Errorf("options changed by arguments that keep the defaults: %+v", o)
	}
	if o.ReadLanes() < 1 {
		t.Errorf("default read lanes %d, want GOMAXPROCS", o.ReadLanes())
	}
	o.SetReadLanes(-1)
	if o.ReadLanes() != 0 {
		t.Errorf("read lanes turned off: %d", o.ReadLanes())
	}
	o.SetPurgeInterval(-1)
	if o.PurgeEvery >= 0 {
		t.Errorf("purge turned off: %v", o.PurgeEvery)
	}
}

// quoted is a dialect that quotes names with double quotes.
var quoted = &Dialect{
	Name: "somestore", Qualifier: "schema", MaxIdent: 20,
	Quote: func(schema, name string) string {
		if schema == "" {
			return `"` + name + `"`
		}
		return `"` + schema + `"."` + name + `"`
	},
}

func TestParseTable(t *testing.T) {
	for _, tc := range []struct{ name, schema, last, err string }{
		{name: "records", last: "records"},
		{name: "app.records", schema: "app", last: "records"},
		{name: "a.b.c", err: "at most one dot (schema.table)"},
		{name: "1records", err: `"1records" is not a plain identifier`},
		{name: "app.", err: `"" is not a plain identifier`},
		{name: strings.Repeat("r", 21), err: "at most 20 bytes"},
	} {
		tb, err := quoted.ParseTable(tc.name)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "somestore: ")):
			t.Errorf("ParseTable(%q): %v, want an error with %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || tb.Name != tc.name || tb.Schema != tc.schema || tb.Last != tc.last):
			t.Errorf("ParseTable(%q) = %+v, %v", tc.name, tb, err)
		}
	}
}

func TestCreateNamesTheTablesAndTheirIndexes(t *testing.T) {
	const (
		schema = "CREATE TABLE idem_records (x int);\nCREATE INDEX idem_records_expires_at ON idem_records (x);\n"
		steps  = "CREATE TABLE idem_records_steps (x int);\nCREATE INDEX idem_records_steps_expires_at ON idem_records_steps (x);\n"
	)
	tb, err := quoted.ParseTable("app.t")
	if err != nil {
		t.Fatal(err)
	}
	records, journal := tb.Create(schema, steps)
	if want := "CREATE TABLE \"app\".\"t\" (x int);\nCREATE INDEX \"t_expires_at\" ON \"app\".\"t\" (x);\n"; records != want {
		t.Errorf("records:\n%s\nwant\n%s", records, want)
	}
	if want := "CREATE TABLE \"app\".\"t_steps\" (x int);\nCREATE INDEX \"t_steps_expires_at\" ON \"app\".\"t_steps\" (x);\n"; journal != want {
		t.Errorf("steps:\n%s\nwant\n%s", journal, want)
	}
	def, _ := quoted.ParseTable(DefaultTable)
	if records, journal := def.Create(schema, steps); records != schema || journal != steps {
		t.Errorf("the default table's schema changed:\n%s%s", records, journal)
	}
}

func TestConfigErrorIsMisconfigured(t *testing.T) {
	cause := errors.New("the server's")
	d := &Dialect{Misconfigured: func(error) (string, bool) { return "no table", true }}
	err := d.StoreError("acquire", cause)
	if !errors.Is(err, idemstore.ErrStoreMisconfigured) || !errors.Is(err, idemstore.ErrStoreUnavailable) || !errors.Is(err, cause) {
		t.Errorf("%v: want misconfigured and unavailable, wrapping the cause", err)
	}
	if want := "misconfigured: no table: run Store.Check for what to change"; !strings.Contains(err.Error(), want) {
		t.Errorf("%q, want it to say %q", err, want)
	}
}

// fakeRows are rows of (name, value) pairs.
type fakeRows struct {
	rows [][2]string
	i    int
}

func (r *fakeRows) Next() bool { r.i++; return r.i <= len(r.rows) }
func (r *fakeRows) Err() error { return nil }
func (r *fakeRows) Scan(dest ...any) error {
	*dest[0].(*string), *dest[1].(*string) = r.rows[r.i-1][0], r.rows[r.i-1][1]
	return nil
}

func TestColumnsTellTheStoresFromTheOthers(t *testing.T) {
	rows := &fakeRows{rows: [][2]string{{"KEY", "bytea"}, {"Extra", "int"}, {"body", "bytea"}, {"more", "text"}}}
	have, err := Columns(rows, strings.ToLower, func(c *string) []any { return []any{c} })
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"key", "body", "status"} {
		typ, ok := have.Ours(name)
		if want := name != "status"; ok != want || (ok && typ != "bytea") {
			t.Errorf("Ours(%q) = %q, %v", name, typ, ok)
		}
	}
	var others []string
	for name, typ := range have.Others() {
		others = append(others, name+" "+typ)
	}
	if got := strings.Join(others, ", "); got != "extra int, more text" {
		t.Errorf("Others: %s, want the table's own in its order", got)
	}
}

// TestStoreErrorPointsToCheckOnlyFromElsewhere: a missing table or right
// met by a statement of the store's points to Store.Check for what to
// change, but not when Check's own statement met it; a connection refused
// for what the connection string says is the dialect's own sentence.
func TestStoreErrorPointsToCheckOnlyFromElsewhere(t *testing.T) {
	noRight := errors.New("permission denied for table records")
	refused := errors.New("database does not exist")
	d := &Dialect{
		Misconfigured: func(err error) (string, bool) { return err.Error(), err == noRight },
		Connect: func(err error) (string, bool) {
			return "create the database or correct its name: " + err.Error(), err == refused
		},
	}
	for _, c := range []struct {
		op   string
		err  error
		want string
	}{
		{"acquire", noRight, "misconfigured: permission denied for table records: run Store.Check for what to change"},
		{"check", noRight, "misconfigured: permission denied for table records"},
		{"check", refused, "misconfigured: create the database or correct its name: database does not exist"},
	} {
		err := d.StoreError(c.op, c.err)
		if !errors.Is(err, idemstore.ErrStoreMisconfigured) || err.Error() != "idem: store "+c.op+": "+c.want {
			t.Errorf("StoreError(%s, %v) = %v; want %q, misconfigured", c.op, c.err, err, c.want)
		}
	}
}
