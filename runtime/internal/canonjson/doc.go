// Package canonjson is the runtime's one pass over a JSON document: the
// canonical form behind the request fingerprint (members sorted, no
// insignificant whitespace, the bytes encoding/json would give), with RFC
// 6901 JSON Pointers left out of it (fingerprint.ignore), and the location
// of one pointer's value and parent as byte ranges of the source (the
// server's body key, the client's filling of it). It depends on nothing
// but the standard library; package idem is its only importer.
package canonjson
