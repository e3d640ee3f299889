package idem

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"
)

func gzipped(s string) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.String()
}

func TestDecodeAcquireReply(t *testing.T) {
	valid := []struct {
		reply any
		want  Acquisition
	}{
		{[]any{"proceed", int64(1)}, Acquisition{Outcome: OutcomeProceed, Fence: 1}},
		{[]any{"recovered", int64(7)}, Acquisition{Outcome: OutcomeRecovered, Fence: 7}},
		{[]any{"conflict", int64(1500)}, Acquisition{Outcome: OutcomeConflict, Remaining: 1500 * time.Millisecond}},
		{[]any{"mismatch"}, Acquisition{Outcome: OutcomeMismatch}},
		{[]any{"replay", int64(201), `{"Location":["/pets/1"]}`, "body", int64(0)}, Acquisition{
			Outcome: OutcomeReplay,
			Record:  &Record{Status: 201, Header: http.Header{"Location": {"/pets/1"}}, Body: []byte("body")},
		}},
		{[]any{"replay", int64(200), "", gzipped("zipped"), int64(flagGzip)}, Acquisition{
			Outcome: OutcomeReplay,
			Record:  &Record{Status: 200, Header: http.Header{}, Body: []byte("zipped")},
		}},
		{[]any{"replay", int64(200), "null", "", int64(flagBodyOmitted)}, Acquisition{
			Outcome: OutcomeReplay,
			Record:  &Record{Status: 200, Header: http.Header{}, BodyOmitted: true},
		}},
	}
	for _, tc := range valid {
		got, err := decodeAcquireReply(tc.reply)
		if err != nil {
			t.Errorf("%v: %v", tc.reply, err)
			continue
		}
		if tc.want.Record != nil && tc.want.Record.Body == nil && !tc.want.Record.BodyOmitted {
			tc.want.Record.Body = []byte{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: got %+v, want %+v", tc.reply, got, tc.want)
		}
	}

	malformed := []any{
		nil,
		"proceed",
		[]any{},
		[]any{int64(1)},
		[]any{"explode"},
		[]any{"proceed"},
		[]any{"proceed", "1"},
		[]any{"proceed", int64(0)},
		[]any{"recovered", int64(-3)},
		[]any{"conflict", int64(0)},
		[]any{"conflict", int64(1) << 62},
		[]any{"mismatch", int64(1)},
		[]any{"replay", int64(200), "", ""},
		[]any{"replay", "200", "", "", int64(0)},
		[]any{"replay", int64(42), "", "", int64(0)},
		[]any{"replay", int64(200), int64(1), "", int64(0)},
		[]any{"replay", int64(200), "", []byte("b"), int64(0)},
		[]any{"replay", int64(200), "", "", "0"},
		[]any{"replay", int64(200), "", "", int64(8)},
		[]any{"replay", int64(200), "{", "", int64(0)},
		[]any{"replay", int64(200), `{"A":"not a list"}`, "", int64(0)},
		[]any{"replay", int64(200), "", "not gzip", int64(flagGzip)},
		[]any{"replay", int64(200), "", gzipped("zipped")[:10], int64(flagGzip)},
		[]any{"replay", int64(200), "", "kept", int64(flagBodyOmitted)},
	}
	for _, reply := range malformed {
		if _, err := decodeAcquireReply(reply); !errors.Is(err, errMalformedReply) {
			t.Errorf("%#v: got %v, want a malformed-reply error", reply, err)
		}
	}
}

func TestHeaderCodecRoundTrip(t *testing.T) {
	for _, h := range []http.Header{
		nil,
		{},
		{"Content-Type": {"text/plain; charset=utf-8"}},
		{"Link": {"<a>; rel=x", "<b>; rel=y"}, "X-Odd": {"\"quoted\"\t\u00e9\x00"}, "Empty": {""}},
	} {
		s, err := encodeHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeHeader(s)
		if err != nil {
			t.Fatalf("%v: %v", h, err)
		}
		want := h
		if len(want) == 0 {
			want = http.Header{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %v gave %v", h, got)
		}
	}
}

// FuzzDecodeAcquireReply builds replies of every shape go-redis can hand
// over (arrays of strings and integers, of any length, in any order) and
// checks that decoding never panics and that what it accepts is coherent.
func FuzzDecodeAcquireReply(f *testing.F) {
	// Seeds are the valid replies, each as (outcome, n1, s1, s2, n2, shape).
	f.Add("proceed", int64(1), "", "", int64(0), uint8(2))
	f.Add("recovered", int64(2), "", "", int64(0), uint8(2))
	f.Add("conflict", int64(999), "", "", int64(0), uint8(2))
	f.Add("mismatch", int64(0), "", "", int64(0), uint8(1))
	f.Add("replay", int64(201), `{"Content-Type":["application/json"]}`, `{"id":1}`, int64(0), uint8(5))
	f.Add("replay", int64(200), "", gzipped("compressed body"), int64(flagGzip), uint8(5))
	f.Add("replay", int64(200), "", "", int64(flagBodyOmitted), uint8(5))
	f.Fuzz(func(t *testing.T, outcome string, n1 int64, s1, s2 string, n2 int64, shape uint8) {
		// The low 3 bits of shape give the length, each higher bit turns
		// one element into the other type.
		elems := []any{outcome, n1, s1, s2, n2}
		alt := []any{n1, s1, n1, n2, s2}
		n := min(int(shape&7), len(elems))
		reply := make([]any, n)
		for i := range n {
			reply[i] = elems[i]
			if shape&(8<<i) != 0 && i < len(alt) {
				reply[i] = alt[i]
			}
		}
		acq, err := decodeAcquireReply(reply)
		if err != nil {
			if !errors.Is(err, errMalformedReply) {
				t.Fatalf("error %v does not wrap errMalformedReply", err)
			}
			return
		}
		switch acq.Outcome {
		case OutcomeProceed, OutcomeRecovered:
			if acq.Fence < 1 {
				t.Fatalf("accepted fence %d", acq.Fence)
			}
		case OutcomeConflict:
			if acq.Remaining < time.Millisecond {
				t.Fatalf("accepted remaining %v", acq.Remaining)
			}
		case OutcomeReplay:
			if acq.Record == nil || acq.Record.Header == nil || acq.Record.Status < 100 {
				t.Fatalf("accepted record %+v", acq.Record)
			}
		case OutcomeMismatch:
		default:
			t.Fatalf("accepted outcome %d", acq.Outcome)
		}
	})
}
