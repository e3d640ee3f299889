// Package sqlfamilytest is the fault suite of the SQL stores (pgstore,
// mysqlstore), written once and run by each store's tests against real
// servers through [Dialect]: the store's state machine on its table
// (transitions, purge, Check, takeovers), its read lanes, step journals,
// runs whose writes commit with their result or roll back without one, a
// handler that ends its run's transaction itself (each dialect's own
// statements, [TxEnd]), and faults of processes and servers: a server
// process killed (SIGKILL) before it answers, an owner frozen (SIGSTOP)
// past its lock, a live owner slower than its lock, the database
// restarted under load, a COMMIT whose answer is lost, tables the store
// cannot keep its promise on.
//
// A store runs it from one test:
//
//	func TestFaults(t *testing.T) { sqlfamilytest.Run(t, dialect{}) }
//
// The process scenarios start that very test binary again as the server
// that is killed or frozen: [Run] serves it when the environment says so.
// A scenario only one store has stays in that store's tests, which may
// use the suite's helpers ([Harness]).
//
// It lives under runtime/internal, where only the stores' tests reach it:
// it is in no user's build, and a published module requires no module of
// test helpers for it.
package sqlfamilytest
