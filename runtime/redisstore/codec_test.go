package redisstore

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

func gzipped(s string) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.String()
}

// compact is a compact completed record of fingerprint "f" with result.
func compact(result string) string { return "c" + storedFingerprint("f") + result }

func TestDecodeAcquireReply(t *testing.T) {
	valid := []struct {
		reply any
		want  idemstore.Acquisition
	}{
		{[]any{"proceed", int64(1)}, idemstore.Acquisition{Outcome: idemstore.OutcomeFirstRun, Fence: 1}},
		{[]any{"recovered", int64(7)}, idemstore.Acquisition{Outcome: idemstore.OutcomeRecovered, Fence: 7}},
		{[]any{"conflict", int64(1500)}, idemstore.Acquisition{Outcome: idemstore.OutcomeConflict, Remaining: 1500 * time.Millisecond}},
		{[]any{"mismatch"}, idemstore.Acquisition{Outcome: idemstore.OutcomeMismatch}},
		{[]any{"replay", compact("2!d\x09\x02\x07/pets/1body")}, idemstore.Acquisition{
			Outcome: idemstore.OutcomeReplay,
			Record: &idemstore.Record{Status: 201, Header: http.Header{
				"Content-Type": {"application/json"}, "Location": {"/pets/1"},
			}, Body: []byte("body")},
		}},
		{[]any{"replay", compact("2 `\x0d\x00\x03X-A\x01a\x00\x03X-A\x00")}, idemstore.Acquisition{
			Outcome: idemstore.OutcomeReplay,
			Record:  &idemstore.Record{Status: 200, Header: http.Header{"X-A": {"a", ""}}, Body: []byte{}},
		}},
		{[]any{"replay", compact("9\x83B" + gzipped("zipped"))}, idemstore.Acquisition{
			Outcome: idemstore.OutcomeReplay,
			Record:  &idemstore.Record{Status: 999, Header: http.Header{}, Body: []byte("zipped")},
		}},
		{[]any{"replay", compact("2 A")}, idemstore.Acquisition{
			Outcome: idemstore.OutcomeReplay,
			Record:  &idemstore.Record{Status: 200, Header: http.Header{}, BodyOmitted: true},
		}},
		// Format 1, written by the versions before.
		{[]any{"replay", "C\nf\n201 0 18\nLocation: /pets/1\nbody"}, idemstore.Acquisition{
			Outcome: idemstore.OutcomeReplay,
			Record:  &idemstore.Record{Status: 201, Header: http.Header{"Location": {"/pets/1"}}, Body: []byte("body")},
		}},
		{[]any{"replay", "C\nf\n200 2 0\n" + gzipped("zipped")}, idemstore.Acquisition{
			Outcome: idemstore.OutcomeReplay,
			Record:  &idemstore.Record{Status: 200, Header: http.Header{}, Body: []byte("zipped")},
		}},
		{[]any{"replay", "C\nf\n200 1 0\n"}, idemstore.Acquisition{
			Outcome: idemstore.OutcomeReplay,
			Record:  &idemstore.Record{Status: 200, Header: http.Header{}, BodyOmitted: true},
		}},
	}
	for _, tc := range valid {
		got, err := decodeAcquireReply(tc.reply)
		if err != nil {
			t.Errorf("%q: %v", tc.reply, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v, want %+v", tc.reply, got, tc.want)
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
		[]any{"replay"},
		[]any{"replay", int64(200)},
		[]any{"replay", []byte("C\nf\n200 0 0\n")},
		[]any{"replay", "C\nf\n200 0 0\n", "extra"},
		[]any{"replay", "I\nf\nowner\n1\n100"},   // not completed
		[]any{"replay", "C\n\n200 0 0\n"},        // no fingerprint
		[]any{"replay", "C\nf\n200 0\n"},         // no header length
		[]any{"replay", "C\nf\n200 0 0 0\n"},     // extra field
		[]any{"replay", "C\nf\n42 0 0\n"},        // status out of range
		[]any{"replay", "C\nf\n0200 0 0\n"},      // leading zero
		[]any{"replay", "C\nf\n+200 0 0\n"},      // sign
		[]any{"replay", "C\nf\n200 4 0\n"},       // unknown flag
		[]any{"replay", "C\nf\n200 0 9\nA: b\n"}, // header longer than the rest
		[]any{"replay", "C\nf\n200 0 4\nA: bc"},  // header block without its newline
		[]any{"replay", "C\nf\n200 0 5\nA:bc\n"}, // header line without ": "
		[]any{"replay", "C\nf\n200 0 6\n: bc\n"}, // empty name
		[]any{"replay", "C\nf\n200 0 15\nA: 1\nB: 2\nA: 3\n"},
		[]any{"replay", "C\nf\n200 2 0\nnot gzip"},
		[]any{"replay", "C\nf\n200 2 0\n" + gzipped("zipped")[:10]},
		[]any{"replay", "C\nf\n200 1 0\nkept"},
		[]any{"replay", "C\nf\n200 3 0\n"},
		// Compact records.
		[]any{"replay", "c" + storedFingerprint("f")[:15]}, // short fingerprint
		[]any{"replay", compact("")},                       // no status
		[]any{"replay", compact("2 ")},                     // no meta byte
		[]any{"replay", compact("0\x83@")},                 // status 99
		[]any{"replay", compact("9\x84@")},                 // status 1000
		[]any{"replay", compact("2 \x80")},                 // unknown meta bit
		[]any{"replay", compact("2 \x04")},                 // meta without bit 6
		[]any{"replay", compact("2\x1f@")},                 // status digits out of range
		[]any{"replay", compact("2 C")},                    // omitted and gzip
		[]any{"replay", compact("2 Akept")},                // omitted body kept
		[]any{"replay", compact("2 Bnot gzip")},            // not gzip
		[]any{"replay", compact("2 `")},                    // header block without length
		[]any{"replay", compact("2 `\x00")},                // empty header block
		[]any{"replay", compact("2 `\x05\x02\x01a")},       // header block past the end
		[]any{"replay", compact("2 `\x03\x09\x01a")},       // unknown name code
		[]any{"replay", compact("2 `\x04\x00\x01:\x00")},   // invalid name
		[]any{"replay", compact("2 `\x03\x02\x05a")},       // value past the block
		[]any{"replay", compact("2 `\x04\x02\x02a\n")},     // newline in a value
		[]any{"replay", compact("2 d\x03\x01\x01a")},       // Content-Type twice
		[]any{"replay", compact("2 `\x09\x02\x01a\x03\x01b\x02\x01c")},
		[]any{"replay", "i" + storedFingerprint("f") + "owner\n1\n100"}, // not completed
	}
	for _, reply := range malformed {
		if _, err := decodeAcquireReply(reply); !errors.Is(err, errMalformedReply) {
			t.Errorf("%q: got %v, want a malformed-reply error", reply, err)
		}
	}
}

func TestResultRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte(`{"name":"rex"},`), 100)
	for _, tc := range []struct {
		rec       *idemstore.Record
		threshold int
		want      *idemstore.Record // nil: rec itself
	}{
		{rec: &idemstore.Record{Status: 204}, want: &idemstore.Record{Status: 204, Header: http.Header{}, Body: []byte{}}},
		{rec: &idemstore.Record{Status: 201, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, Body: []byte("\x00\xff\n\n binary")}},
		{rec: &idemstore.Record{Status: 200, Header: http.Header{
			"Link":  {"<a>; rel=x", "<b>; rel=y"},
			"X-Odd": {"\"quoted\"\t\u00e9\x00: not a name"},
			"Empty": {""},
		}, Body: []byte("{}")}},
		{rec: &idemstore.Record{Status: 200, Header: http.Header{}, Body: big}, threshold: 64},
		{rec: &idemstore.Record{Status: 200, Header: http.Header{}, Body: []byte("too long"), BodyOmitted: true},
			want: &idemstore.Record{Status: 200, Header: http.Header{}, BodyOmitted: true}},
		{ // What net/http would not send is not stored either.
			rec: &idemstore.Record{Status: 302, Header: http.Header{
				"Location":    {"/a\r\nSet-Cookie: x"},
				"Bad Name":    {"v"},
				"":            {"v"},
				"Bad:Name":    {"v"},
				"X-Multiline": {"a\nb"},
			}, Body: []byte("moved")},
			want: &idemstore.Record{Status: 302, Header: http.Header{
				"Location":    {"/a  Set-Cookie: x"},
				"X-Multiline": {"a b"},
			}, Body: []byte("moved")},
		},
	} {
		v := completedRecord(storedFingerprint("fp"), tc.rec, tc.threshold, true)
		r, err := parseRecord(v)
		if err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		want := tc.want
		if want == nil {
			want = tc.rec
		}
		if r.format != 3 || r.state != stateCompleted || r.fingerprint != storedFingerprint("fp") || !reflect.DeepEqual(r.result, want) {
			t.Errorf("round trip of %+v gave %+v", tc.rec, r.result)
		}
		if tc.threshold > 0 && (r.flags != flagGzip || r.storedBody >= len(tc.rec.Body)/4) {
			t.Errorf("%d-byte body stored with flags %d in %d bytes, want gzip", len(tc.rec.Body), r.flags, r.storedBody)
		}
	}
	// The same response is stored as the same bytes.
	h := http.Header{"A": {"1"}, "B": {"2"}, "C": {"3"}, "D": {"4"}, "E": {"5"}, "F": {"6"}, "G": {"7"}, "H": {"8"}, "I": {"9"}}
	first := completedRecord("", &idemstore.Record{Status: 200, Header: h}, 0, true)
	for range 20 {
		if got := completedRecord("", &idemstore.Record{Status: 200, Header: h}, 0, true); got != first {
			t.Fatalf("encodings differ:\n%q\n%q", first, got)
		}
	}
	if !strings.HasPrefix(first, "\xa0\xc8\x01\x2d\x00\x01A\x011\x00\x01B\x012") {
		t.Errorf("encoding %q, want sorted header entries", first)
	}
	// A 201 JSON response takes 3 bytes besides its body, a Location
	// header 2 besides its value.
	rec := &idemstore.Record{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("{}")}
	if got := completedRecord("", rec, 0, false); got != "c2!D{}" {
		t.Errorf("201 JSON response encoded as %q", got)
	}
	rec.Header.Set("Location", "/a")
	if got := completedRecord("", rec, 0, false); got != "c2!d\x04\x02\x02/a{}" {
		t.Errorf("201 JSON response with Location encoded as %q", got)
	}
	// Format 3: the meta bits in the tag, the status and the body's
	// length in one uvarint, as long as format 2's status and meta for a
	// body below 64 bytes (2048 with 3 bytes).
	if got := completedRecord("", rec, 0, true); got != "\xa4\xc9\x11\x04\x02\x02/a{}" {
		t.Errorf("201 JSON response with Location encoded, sized, as %q", got)
	}
	rec.Header.Del("Location")
	rec.Body = bytes.Repeat([]byte("x"), 200)
	if got, unsized := completedRecord("", rec, 0, true), completedRecord("", rec, 0, false); len(got) != len(unsized) {
		t.Errorf("a 200-byte body takes %d bytes sized, %d unsized; want as many", len(got), len(unsized))
	}
}

// FuzzTruncatedRecord: a completed record as the store writes it decodes
// whole, and no part of it cut short decodes at all (parseRecord, and
// acquire.lua's replay through decodeAcquireReply): a record that lost
// its tail in Redis is an error, never a replay of a shorter body.
func FuzzTruncatedRecord(f *testing.F) {
	f.Add(uint16(201), "application/json", "", []byte(`{"order":"o-1","amount":4200}`), false)
	f.Add(uint16(201), "application/json", "/orders/1", []byte(`{}`), false)
	f.Add(uint16(204), "", "", []byte(nil), false)
	f.Add(uint16(200), "text/x-odd", "/a", bytes.Repeat([]byte("compressible "), 40), true)
	f.Add(uint16(200), "", "", bytes.Repeat([]byte{0}, 200), false)
	f.Fuzz(func(t *testing.T, status uint16, ctype, location string, body []byte, compress bool) {
		rec := &idemstore.Record{Status: 100 + int(status)%900, Header: http.Header{}, Body: body}
		if ctype != "" {
			rec.Header.Set("Content-Type", ctype)
		}
		if location != "" {
			rec.Header.Set("Location", location)
		}
		threshold := 0
		if compress {
			threshold = 1
		}
		v := completedRecord(storedFingerprint("f"), rec, threshold, true)
		whole, err := parseRecord(v)
		if err != nil || whole.result.Status != rec.Status || !bytes.Equal(whole.result.Body, body) {
			t.Fatalf("whole record %q: %+v, %v", v, whole.result, err)
		}
		for n := range len(v) {
			if r, err := parseRecord(v[:n]); err == nil && r.state == stateCompleted {
				t.Fatalf("record cut to %d of %d bytes decodes: %+v", n, len(v), r.result)
			}
			if acq, err := decodeAcquireReply([]any{"replay", v[:n]}); err == nil {
				t.Fatalf("record cut to %d of %d bytes replays: %+v", n, len(v), acq.Record)
			}
		}
	})
}

func TestParseInProgressRecord(t *testing.T) {
	fp := storedFingerprint("fp")
	r, err := parseRecord(inProgressRecord(fp, "owner", 3, 86400000))
	want := storedRecord{format: 2, state: stateInProgress, fingerprint: fp, owner: "owner", fence: 3, abandoned: 86400000}
	if err != nil || !reflect.DeepEqual(r, want) {
		t.Errorf("got %+v, %v; want %+v", r, err, want)
	}
	r, err = parseRecord("I\nfp\nowner\n3\n86400000")
	want = storedRecord{format: 1, state: stateInProgress, fingerprint: "fp", owner: "owner", fence: 3, abandoned: 86400000}
	if err != nil || !reflect.DeepEqual(r, want) {
		t.Errorf("format 1: got %+v, %v; want %+v", r, err, want)
	}
	for _, v := range []string{
		"", "I", "I\n", "I\nfp", "I\nfp\n", "I\nfp\nowner", "I\nfp\nowner\n3", "I\nfp\n\n3\n1",
		"I\nfp\nowner\n0\n1", "I\nfp\nowner\n3\n-1", "I\nfp\nowner\n3\n1\n", "I\nfp\nowner\nx\n1",
		"X\nfp\nowner\n3\n1", "IC\nfp\nowner\n3\n1",
		"i", "i" + fp[:15], "i" + fp, "i" + fp + "owner", "i" + fp + "\n3\n1", "i" + fp + "owner\n0\n1",
		"i" + fp + "owner\n3\n1\n", "i" + fp + "owner\n3\n-1", "i" + fp + "owner\n03\n1",
	} {
		if _, err := parseRecord(v); err == nil {
			t.Errorf("%q: accepted", v)
		}
	}
}

// FuzzDecodeAcquireReply builds replies of every shape go-redis can hand
// over (arrays of strings and integers, of any length) and checks that
// decoding never panics, that it accepts only coherent acquisitions, and
// that every replayed record it accepts encodes back to a record that
// decodes to the same.
func FuzzDecodeAcquireReply(f *testing.F) {
	// Seeds are the valid replies, each as (outcome, n, s, shape).
	f.Add("proceed", int64(1), "", uint8(2))
	f.Add("recovered", int64(2), "", uint8(2))
	f.Add("conflict", int64(999), "", uint8(2))
	f.Add("mismatch", int64(0), "", uint8(1))
	f.Add("replay", int64(0), compact("2!D{\"id\":1}"), uint8(2|8))
	f.Add("replay", int64(0), compact("2!d\x09\x02\x07/pets/1body"), uint8(2|8))
	f.Add("replay", int64(0), compact("2 `\x0d\x00\x03X-A\x01a\x00\x03X-A\x00"), uint8(2|8))
	f.Add("replay", int64(0), compact("2 B"+gzipped("compressed body")), uint8(2|8))
	f.Add("replay", int64(0), "C\nf\n201 0 31\nContent-Type: application/json\n{\"id\":1}", uint8(2|8))
	f.Add("replay", int64(0), "C\nf\n200 2 0\n"+gzipped("compressed body"), uint8(2|8))
	f.Add("replay", int64(0), "C\nf\n200 1 0\n", uint8(2|8))
	f.Fuzz(func(t *testing.T, outcome string, n int64, s string, shape uint8) {
		// The low 2 bits of shape give the length, bit 8 makes the second
		// element the string, bit 16 the third.
		reply := []any{outcome, n, n}[:min(int(shape&3), 3)]
		for i := 1; i < len(reply); i++ {
			if shape&(4<<i) != 0 {
				reply[i] = s
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
		case idemstore.OutcomeFirstRun, idemstore.OutcomeRecovered:
			if acq.Fence < 1 {
				t.Fatalf("accepted fence %d", acq.Fence)
			}
		case idemstore.OutcomeConflict:
			if acq.Remaining < time.Millisecond {
				t.Fatalf("accepted remaining %v", acq.Remaining)
			}
		case idemstore.OutcomeReplay:
			rec := acq.Record
			if rec == nil || rec.Header == nil || rec.Status < 100 || rec.Status > 999 || (rec.BodyOmitted && len(rec.Body) != 0) {
				t.Fatalf("accepted record %+v", rec)
			}
			again, err := parseRecord(completedRecord(storedFingerprint("f"), rec, 0, true))
			if err != nil || !reflect.DeepEqual(again.result, rec) {
				t.Fatalf("record %+v encodes to one that decodes to %+v, %v", rec, again.result, err)
			}
		case idemstore.OutcomeMismatch:
		default:
			t.Fatalf("accepted outcome %d", acq.Outcome)
		}
	})
}
