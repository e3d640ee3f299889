package e2e_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// call is one request of a sequence; its body is built afresh for every
// server.
type call struct {
	method, path, contentType string
	body                      func() io.Reader
	header                    []string // name, value, ...
}

func jsonCall(path, body string, header ...string) call {
	return call{method: "POST", path: path, contentType: "application/json",
		body: func() io.Reader { return strings.NewReader(body) }, header: header}
}

// gzipCall is jsonCall with the body gzip-compressed and marked
// Content-Encoding: gzip.
func gzipCall(path, body string, header ...string) call {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = io.WriteString(zw, body)
	_ = zw.Close()
	zipped := b.String()
	return call{method: "POST", path: path, contentType: "application/json",
		body: func() io.Reader { return strings.NewReader(zipped) }, header: append([]string{"Content-Encoding", "gzip"}, header...)}
}

// uploadCall is a multipart upload of file with purpose, boundary fixed so
// that equal arguments give equal bytes.
func uploadCall(file, purpose string, header ...string) call {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if err := mw.SetBoundary("idemgen-e2e-boundary"); err != nil {
		panic(err)
	}
	fw, _ := mw.CreateFormFile("file", "notes.txt")
	_, _ = io.WriteString(fw, file)
	_ = mw.WriteField("purpose", purpose)
	_ = mw.Close()
	body := b.String()
	return call{method: "POST", path: "/files", contentType: mw.FormDataContentType(),
		body: func() io.Reader { return strings.NewReader(body) }, header: header}
}

// verdict is what the comparison looks at: what a client's retry logic
// decides on.
type verdict struct {
	Status   int
	Code     string // the problem's code member, "" for an answer that is not a problem
	Replayed string // Idempotent-Replayed
}

func (c call) run(t *testing.T, h http.Handler) verdict {
	t.Helper()
	req := httptest.NewRequest(c.method, c.path, c.body())
	req.Header.Set("Content-Type", c.contentType)
	for i := 0; i+1 < len(c.header); i += 2 {
		req.Header.Add(c.header[i], c.header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
	v := verdict{Status: a.status, Replayed: a.header.Get("Idempotent-Replayed")}
	if strings.HasPrefix(a.header.Get("Content-Type"), "application/problem+json") {
		v.Code = problemCode(t, a)
	}
	return v
}

const key = "Idempotency-Key"

// TestStrictAndPlainAnswerAlike runs each sequence of requests against the
// strict and the plain server, each over a fresh shop and store, and
// requires the same status, problem code and replay marker for every
// request, and the wanted verdicts where the sequence states them. The
// strict server sees the body as the client sent it, like the plain one:
// members the schema does not name, member names in another case and
// multipart bodies count the same way in both.
//
// Left out: a body the typed request cannot hold (a string where the schema
// says integer). The strict handler refuses it before any handler runs
// (IdempotencyErrorHandler: 400 bad-request, not stored); in the plain
// server the user's handler decodes it and decides, under the key.
func TestStrictAndPlainAnswerAlike(t *testing.T) {
	created := verdict{Status: http.StatusCreated}
	replayed := verdict{Status: http.StatusCreated, Replayed: "true"}
	mismatch := verdict{Status: http.StatusUnprocessableEntity, Code: "fingerprint-mismatch"}
	sequences := []struct {
		name  string
		calls []call
		want  []verdict // per call; nil: only that both servers agree
	}{
		{"a member the schema does not name counts", []call{
			jsonCall("/orders", `{"item":"a","quantity":1,"junk":"x"}`, key, "k"),
			jsonCall("/orders", `{"item":"a","quantity":1,"junk":"y"}`, key, "k"),
			jsonCall("/orders", `{"quantity":1, "junk":"x","item":"a"}`, key, "k"),
		}, []verdict{created, mismatch, replayed}},
		{"a member name in another case is another body", []call{
			jsonCall("/orders", `{"item":"a","quantity":1}`, key, "k"),
			jsonCall("/orders", `{"ITEM":"a","quantity":1}`, key, "k"),
		}, []verdict{created, mismatch}},
		{"a body key member in another case is no key", []call{
			jsonCall("/payments", `{"IDEMPOTENCY_KEY":"p","amount":5}`),
			jsonCall("/payments", `{"idempotency_key":"p","amount":5}`),
			jsonCall("/payments", `{"idempotency_key":"p","amount":5,"Amount":6}`),
		}, []verdict{{Status: http.StatusBadRequest, Code: "missing-key"}, created, mismatch}},
		{"an ignored member does not count, its case does", []call{
			jsonCall("/payments", `{"idempotency_key":"p","amount":5,"trace_id":"a"}`),
			jsonCall("/payments", `{"idempotency_key":"p","amount":5,"trace_id":"b"}`),
			jsonCall("/payments", `{"idempotency_key":"p","amount":5,"TRACE_ID":"b"}`),
		}, []verdict{created, replayed, mismatch}},
		{"a key header sent twice", []call{
			jsonCall("/orders", `{"item":"a","quantity":1}`, key, "k", key, "k"),
			{method: "POST", path: "/orders/o1/ship", body: func() io.Reader { return http.NoBody }, header: []string{key, "k", key, "k"}},
		}, []verdict{{Status: http.StatusBadRequest, Code: "invalid-key"}, {Status: http.StatusBadRequest, Code: "invalid-key"}}},
		{"a multipart upload", []call{
			uploadCall("hello", "dispute_evidence", key, "f"),
			uploadCall("hello", "dispute_evidence", key, "f"),
			uploadCall("hello!", "dispute_evidence", key, "f"),
			uploadCall("hello", "identity_document", key, "f"),
			uploadCall("hello", "dispute_evidence"),
		}, []verdict{created, replayed, mismatch, mismatch, {Status: http.StatusBadRequest, Code: "missing-key"}}},
		{"an encoded body is refused before the handler, and not stored", []call{
			gzipCall("/orders", `{"item":"a","quantity":1}`, key, "k"),
			jsonCall("/orders", `{"item":"a","quantity":1}`, key, "k"),
			jsonCall("/orders", `{"item":"a","quantity":1}`, key, "k"),
		}, []verdict{{Status: http.StatusUnsupportedMediaType, Code: "unsupported-content-encoding"}, created, replayed}},
		{"whitespace around the body does not count", []call{
			jsonCall("/orders", `{"item":"a","quantity":1}`, key, "k"),
			jsonCall("/orders", `{"item":"a","quantity":1} `, key, "k"),
		}, []verdict{created, replayed}},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, seq := range sequences {
				t.Run(seq.name, func(t *testing.T) {
					got := map[string][]verdict{}
					for _, srv := range servers() {
						h := srv.handler(&shop{}, b.store(t))
						for _, c := range seq.calls {
							got[srv.name] = append(got[srv.name], c.run(t, h))
						}
					}
					for i := range seq.calls {
						p := got["chi plain"][i]
						if seq.want != nil && p != seq.want[i] {
							t.Errorf("call %d: %+v, want %+v", i+1, p, seq.want[i])
						}
						for _, srv := range servers() {
							v := got[srv.name][i]
							if !srv.routerProblems && p.Status == http.StatusBadRequest && v.Status == http.StatusBadRequest && v.Code == "" {
								// echo and gin answer their router's own 400s
								// in their format (no generated error handler
								// yet): compare the rest.
								v.Code = p.Code
							}
							if v != p {
								t.Errorf("call %d: %s %+v, chi plain %+v", i+1, srv.name, v, p)
							}
						}
					}
				})
			}
		})
	}
}

// stream is a request body of size bytes, a JSON object padded with a
// member the schema does not name, produced as it is read; it counts the
// bytes read.
type stream struct {
	size int64
	read atomic.Int64
}

func (s *stream) Read(p []byte) (int, error) {
	const head = `{"item":"a","quantity":1,"junk":"`
	off := s.read.Load()
	if off >= s.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), s.size-off))
	for i := range n {
		switch at := off + int64(i); {
		case at < int64(len(head)):
			p[i] = head[at]
		case at == s.size-2:
			p[i] = '"'
		case at == s.size-1:
			p[i] = '}'
		default:
			p[i] = 'x'
		}
	}
	s.read.Add(int64(n))
	return n, nil
}

// TestLargeBodyBounded sends a 100 MB body to both servers: with a key it
// is refused with 413 once the default 1 MiB limit is passed, without
// reading much further, and nothing runs or is stored; without a key the
// 400 comes before the body is read at all.
func TestLargeBodyBounded(t *testing.T) {
	const size, limit = 100 << 20, 1 << 20
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, srv := range servers() {
				t.Run(srv.name, func(t *testing.T) {
					if srv.fasthttp() {
						t.Skip("fasthttp reads the whole body, bounded by fiber's BodyLimit, before any handler runs; TestServer's scenario \"an undecodable body over the limit is 413\" covers its 413")
					}
					s := &shop{}
					h := srv.handler(s, b.store(t))
					for _, announced := range []bool{false, true} {
						body := &stream{size: size}
						length := int64(-1)
						if announced {
							length = size
						}
						a := sendStream(h, body, length, key, "big")
						wantStatus(t, a, http.StatusRequestEntityTooLarge)
						if code := problemCode(t, a); code != "payload-too-large" {
							t.Errorf("code = %q, want payload-too-large", code)
						}
						if n := body.read.Load(); n > limit+1 || (announced && n != 0) {
							t.Errorf("read %d bytes of the body (announced length: %v), want at most %d", n, announced, limit+1)
						}
					}
					wantCount(t, "createOrder (calls)", s.createCalls.Load(), 0)
					// Nothing was stored under the key: it runs afresh.
					wantStatus(t, do(t, h, "POST", "/orders", order1, key, "big"), http.StatusCreated)
					wantCount(t, "createOrder", s.created.Load(), 1)

					body := &stream{size: size}
					a := sendStream(h, body, -1)
					wantStatus(t, a, http.StatusBadRequest)
					if code := problemCode(t, a); code != "missing-key" {
						t.Errorf("without a key: code = %q, want missing-key", code)
					}
					if n := body.read.Load(); n != 0 {
						t.Errorf("without a key: read %d bytes of the body before the 400, want 0", n)
					}
				})
			}
		})
	}
}

// sendStream posts body, of announced length (-1: unknown), as a JSON
// order with the given headers (name, value, ...).
func sendStream(h http.Handler, body io.Reader, length int64, header ...string) answer {
	req := httptest.NewRequest("POST", "/orders", body)
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

// TestStrictUndecodableBody: a body the strict handler cannot decode into
// the typed request is answered by IdempotencyErrorHandler, a problem, and
// not stored under the key (no handler ran): the corrected request runs.
func TestStrictUndecodableBody(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := &shop{}
			h := servers()[0].handler(s, b.store(t))
			a := do(t, h, "POST", "/orders", `{"item":"a","quantity":"two"}`, key, "k")
			wantStatus(t, a, http.StatusBadRequest)
			if code := problemCode(t, a); code != "bad-request" {
				t.Errorf("code = %q, want bad-request", code)
			}
			wantStatus(t, do(t, h, "POST", "/orders", `{"item":"a","quantity":2}`, key, "k"), http.StatusCreated)
			wantCount(t, "createOrder", s.created.Load(), 1)
		})
	}
}
