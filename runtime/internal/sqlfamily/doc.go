// Package sqlfamily is what the SQL stores (pgstore, mysqlstore) share, so
// that it is written once: each store keeps only its dialect and its
// driver's glue.
package sqlfamily
