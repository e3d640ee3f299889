package idem

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	"github.com/idemgen/idemgen/runtime/idemop"
)

// ProblemError is the error of a call whose final answer is a problem: a
// status of 400 or more with an application/problem+json body (RFC 9457),
// such as 422 fingerprint-mismatch or a 400 of the API's own validation.
// The typed response is returned beside it, as for any final answer; a
// problem the call retried and gave up on is a [RetryError] instead.
//
// errors.As finds the decoded problem as a *Problem too:
//
//	var p *idem.Problem
//	if errors.As(err, &p) && p.Code == idemop.CodeFingerprintMismatch { ... }
type ProblemError struct {
	Op  string // operation ID
	Key string // the idempotency key sent on every attempt
	// Problem is the decoded body; its Status is the response's when the
	// body has none, and members it cannot decode are left empty.
	Problem Problem
	// Response is the final response (its body already read by
	// oapi-codegen's client).
	Response *http.Response
}

// Error describes the problem without the key, which stays in e.Key: keys
// are kept out of logs.
func (e *ProblemError) Error() string {
	msg := fmt.Sprintf("idem: %s answered %d", e.Op, e.Problem.Status)
	if e.Problem.Code != "" {
		msg += " " + e.Problem.Code
	}
	switch {
	case e.Problem.Detail != "":
		msg += ": " + e.Problem.Detail
	case e.Problem.Title != "":
		msg += ": " + e.Problem.Title
	}
	return msg
}

// Unwrap returns the decoded problem, for errors.As.
func (e *ProblemError) Unwrap() error { return &e.Problem }

// Answer hands [Call.Run] an attempt's response together with its body as
// oapi-codegen's ClientWithResponses read it (the typed response's Body),
// so that a final problem answer is decoded into a [ProblemError]. It
// returns resp and no error, for the attempt function to return:
//
//	return call.Answer(r.HTTPResponse, r.Body)
func (c *Call) Answer(resp *http.Response, body []byte) (*http.Response, error) {
	c.answer = answer{resp: resp, body: body}
	return resp, nil
}

// answer is an attempt's response and body, as given to Answer.
type answer struct {
	resp *http.Response
	body []byte
}

// problem returns the ProblemError of the final response resp, nil when it
// is not a problem or its body was not handed to Answer.
func (c *Call) problem(resp *http.Response) error {
	if resp == nil || resp.StatusCode < 400 || c.answer.resp != resp {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != idemop.ProblemContentType {
		return nil
	}
	var p Problem
	_ = json.Unmarshal(c.answer.body, &p) // what does not decode stays empty
	if p.Status == 0 {
		p.Status = resp.StatusCode
	}
	return &ProblemError{Op: c.op.ID, Key: c.key, Problem: p, Response: resp}
}
