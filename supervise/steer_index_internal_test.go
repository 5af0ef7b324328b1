package supervise

import (
	"strconv"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// steerRow is a steer-requested or steer-acknowledged row of op.
func steerRow(t *testing.T, kind, op string) Record {
	t.Helper()
	var v any = SteerRequest{SchemaVersion: steerSchemaVersion, OperationID: op, Source: SteerSourceCoordination, Worker: "r:s1", Message: "m"}
	if kind == KindSteerAcknowledged {
		v = SteerAck{OperationID: op, Worker: "r:s1", Effect: SteerNotLive}
	}
	d, err := canonjson.ToValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return Record{Kind: kind, Node: "r:s1", Data: d}
}

// A steer_agent call looks its operation up in the journal
// (journaledSteer) twice; a run's k steers must not each read the whole
// journal (k steers over a journal of n rows read n·k rows: a run of
// 10k steers resumed in minutes). Each row is read once however many
// lookups follow, and the lookups still find the first request of an op
// and its last acknowledgement.
func TestJournaledSteerReadsEachRowOnce(t *testing.T) {
	l := &runLog{}
	const n = 1000
	for i := range n {
		op := SteerSourceCoordination + "-" + strconv.Itoa(i)
		l.rows.add(steerRow(t, KindSteerRequested, op))
		l.rows.add(steerRow(t, KindSteerAcknowledged, op))
	}
	for i := range n {
		op := SteerSourceCoordination + "-" + strconv.Itoa(i)
		req, ack, ok := l.journaledSteer(op)
		if !ok || req.OperationID != op || ack == nil || ack.OperationID != op {
			t.Fatalf("op %s: found %v, request %+v, ack %+v", op, ok, req, ack)
		}
	}
	if _, _, ok := l.journaledSteer(SteerSourceCoordination + "-" + strconv.Itoa(n)); ok {
		t.Fatal("an op never journaled was found")
	}
	// A row appended after the lookups is found too.
	late := SteerSourceCoordination + "-late"
	l.rows.add(steerRow(t, KindSteerRequested, late))
	if _, ack, ok := l.journaledSteer(late); !ok || ack != nil {
		t.Fatalf("late op: found %v, ack %+v", ok, ack)
	}
	if l.steerRowsRead > l.rows.len() {
		t.Errorf("%d lookups read %d rows of a %d-row journal; want each row read once", n+2, l.steerRowsRead, l.rows.len())
	}
}
