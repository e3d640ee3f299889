package sqlfamilytest

import (
	"os"
	"testing"
)

// scenarios are the suite's tests, each run as a subtest of [Run].
var scenarios = []struct {
	name string
	run  func(t *testing.T, d Dialect)
}{
	// The state machine on the store's table (store.go).
	{"Transitions", testTransitions},
	{"Purge", testPurge},
	{"PurgeSkipsLockedRows", testPurgeSkipsLockedRows},
	{"BackgroundPurge", testBackgroundPurge},
	{"Check", testCheck},
	{"SchemaUnderAnotherName", testSchemaUnderAnotherName},
	{"Unreachable", testUnreachable},
	{"ReadLanesUnderLoad", testReadLanesUnderLoad},
	{"ReadBatchReplies", testReadBatchReplies},
	{"ReadBatchServerError", testReadBatchServerError},
	{"ReadLanesContextEnds", testReadLanesContextEnds},
	// Step journals (steps.go).
	{"StepJournal", testStepJournal},
	{"StepCommitsItsWritesWithItsEntry", testStepCommitsItsWritesWithItsEntry},
	{"StepsPurged", testStepsPurged},
	{"StepsOfAClaimedRun", testStepsOfAClaimedRun},
	// Runs whose writes commit with their result (tx.go).
	{"TxCommitsWithTheResult", testTxCommitsWithTheResult},
	{"ConcurrentOneKey", testConcurrentOneKey},
	{"SlowLiveOwnerKeepsTheKey", testSlowLiveOwnerKeepsTheKey},
	{"ClientThatLeavesGetsAReplay", testClientThatLeavesGetsAReplay},
	{"AnotherPayloadInFlight", testAnotherPayloadInFlight},
	{"HandlerEndsTheTransaction", testHandlerEndsTheTransaction}, // txend.go
	// Runs that end without a stored result, or with one (rollback.go).
	{"TxRollsBack", testTxRollsBack},
	{"TxCancelledRollsBack", testTxCancelledRollsBack},
	{"TxHandlersFailedStatement", testTxHandlersFailedStatement},
	{"TxCommitsARecordThatExpiredUnderItsLock", testTxCommitsARecordThatExpiredUnderItsLock},
	// Takeovers of a lapsed lease, and fingerprints (takeover.go).
	{"FingerprintBeforeTheAPIRefused", testFingerprintBeforeTheAPIRefused},
	{"TakeoverWinsOverALateOwner", testTakeoverWinsOverALateOwner},
	// Tables the store cannot keep its promise on (misconfig.go).
	{"MisconfiguredTable", testMisconfiguredTable},
	{"TriggerAddedUnderARunningStore", testTriggerAddedUnderARunningStore},
	// Faults of connections, processes and servers.
	{"LostCommitIsLookedUp", testLostCommitIsLookedUp},             // lostcommit.go
	{"LostCommitThatDidNotCommit", testLostCommitThatDidNotCommit}, // lostcommit.go
	{"CrashBeforeAnswer", testCrashBeforeAnswer},                   // process.go
	{"StaleOwnerFrozen", testStaleOwnerFrozen},                     // process.go
	{"RestartUnderLoad", testRestartUnderLoad},                     // restart.go
}

// Run runs the suite against d, each scenario as a subtest. In the server
// process that the process scenarios start (the test binary again, with
// the environment saying so), it serves instead, until killed.
func Run(t *testing.T, d Dialect) {
	if os.Getenv(envChild) == "1" {
		serveChild(t, d)
		return
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, d) })
	}
}
